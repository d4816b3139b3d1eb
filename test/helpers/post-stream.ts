/** One SSE event as a streaming client reads it. */
export interface Frame {
  id: string;
  event: string;
  data: Record<string, unknown>;
}

/** Reads the events of a POST stream with fetch's body reader, as a browser or SDK client would. */
export async function* readEvents(response: Response): AsyncGenerator<Frame> {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const fields = Object.fromEntries(
        block
          .split('\n')
          .filter((line) => !line.startsWith(':'))
          .map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 2)]),
      );
      if (fields.data !== undefined) yield { id: fields.id!, event: fields.event!, data: JSON.parse(fields.data) };
    }
  }
}
