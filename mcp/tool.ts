import type { z } from 'zod';
import type { Principal } from '../src/engine/dependencies.ts';
import type { Engine } from '../src/engine/index.ts';

/**
 * The MCP tools, declared as data like the REST routes: a name, what the model is told, the
 * shared zod schema the arguments are parsed with (and the published JSON Schema is generated
 * from), and a handler that calls the same engine use case as REST. Adding a tool is one more
 * entry in `mcpTools`; server.ts lists, validates, rate-limits and renders every entry alike.
 */
export interface McpTool<I extends z.ZodType = z.ZodType> {
  name: string;
  description: string;
  input: I;
  /** A call that changes state counts against the write buckets, like a REST POST; others against the reads. */
  writes: boolean;
  handler(engine: Engine, principal: Principal, input: z.output<I>): Promise<unknown>;
}

export const tool = <I extends z.ZodType>(spec: McpTool<I>) => spec as unknown as McpTool;
