import { type CpuTrackerHere, type SamplerRequest, trackCpuHere } from './cpu.ts';

/**
 * The CPU sampler as a child process of the bench (started by cpu.ts's trackCpu), so that its
 * passes over /proc run on an event loop of their own and not on the server's. Protocol: the
 * parent sends { type: 'start', id, database, postmasterPid } and { type: 'stop', id }; the child
 * answers { type: 'started', id } once the baseline pass is taken, and { type: 'stopped', id,
 * totals } with CPU milliseconds by process kind. It exits when the parent disconnects.
 */
if (!process.send) throw new Error('cpu-sampler.ts must be spawned with an IPC channel (by cpu.ts)');
const send = (message: unknown) => process.send!(message);
const trackers = new Map<number, CpuTrackerHere>();

process.on('message', (message: SamplerRequest) => {
  if (message.type === 'start') {
    trackers.set(message.id, trackCpuHere(message.database, message.postmasterPid));
    send({ type: 'started', id: message.id });
    return;
  }
  const tracker = trackers.get(message.id);
  trackers.delete(message.id);
  send({ type: 'stopped', id: message.id, totals: tracker?.stop() });
});
process.on('disconnect', () => process.exit(0));
send({ type: 'ready' });
