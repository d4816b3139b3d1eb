import { type LoadRequest, type ProbeRequest, runLoad, runProbe } from './load.ts';

/**
 * The load generator as a child process (spawned by run.ts with tsx and an IPC channel), so its
 * CPU is accounted apart from the server's and its event loop does not delay the server's.
 * Protocol: the parent sends { type: 'run' | 'probe', id, request }; the child answers with
 * { type: 'progress', id, progress } each second and { type: 'result' | 'error', id, ... }.
 */
type Message = { type: 'run'; id: number; request: LoadRequest } | { type: 'probe'; id: number; request: ProbeRequest } | { type: 'exit' };

if (!process.send) throw new Error('client.ts must be spawned with an IPC channel (by run.ts)');
const send = (message: unknown) => process.send!(message);

process.on('message', (message: Message) => {
  if (message.type === 'exit') {
    process.disconnect();
    return;
  }
  const work =
    message.type === 'probe' ? runProbe(message.request) : runLoad(message.request, (progress) => send({ type: 'progress', id: message.id, progress }));
  (work as Promise<unknown>)
    .then((result) => send({ type: 'result', id: message.id, result }))
    .catch((error: unknown) => send({ type: 'error', id: message.id, error: error instanceof Error ? error.message : String(error) }));
});
send({ type: 'ready' });
