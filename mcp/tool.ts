import type { z } from 'zod';
import type { Principal } from '../src/engine/common/index.ts';
import type { Engine } from '../src/engine/index.ts';

/**
 * The four MCP tool hints, each set on purpose for every tool (docs/mcp.md "Annotations"):
 *  - readOnlyHint: the call changes nothing (exactly the tools with `writes: false`);
 *  - destructiveHint: the call may spend or pay money, overwrite or delete something that exists,
 *    or move a transaction or a task to a state it cannot come back from; false when it only adds
 *    a new record and moves no money (and for reads);
 *  - idempotentHint: repeating the same arguments has no further effect (reads, setting values,
 *    deleting, the steps of one transaction); false for a tool that creates something new on
 *    every call that carries no idempotency_key;
 *  - openWorldHint: false for every tool: each acts on this marketplace's own records, none
 *    reaches the web or another system for the caller.
 */
export interface ToolHints {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

/**
 * The MCP tools, declared as data like the REST routes: a name and a title, what the model is
 * told, the hints, the zod schema the arguments are parsed with (and the published JSON Schema is
 * generated from; the REST route's where there is one), the zod schema of what the handler
 * answers (the REST route's response schema where there is one: the published outputSchema), and
 * a handler that calls the same engine use case as REST. Adding a tool is one more entry in
 * `mcpTools`; server.ts lists, validates, rate-limits and renders every entry alike.
 */
export interface McpTool<I extends z.ZodType = z.ZodType, O extends z.ZodType = z.ZodType> {
  name: string;
  /** A short human-readable name, shown by clients instead of `name`. */
  title: string;
  description: string;
  annotations: ToolHints;
  input: I;
  output: O;
  /** A call that changes state counts against the write buckets, like a REST POST; others against the reads. */
  writes: boolean;
  /**
   * An update, as a REST PUT is: `null` for a field that cannot be cleared is refused (4000), not
   * read as the field left out as it is for every other tool (docs/decisions/api-surface.md).
   */
  updates?: true;
  handler(engine: Engine, principal: Principal, input: z.output<I>): Promise<z.input<O>>;
}

export const tool = <I extends z.ZodType, O extends z.ZodType>(spec: McpTool<I, O>) => spec as unknown as McpTool;

/** The hints of a tool that only reads. */
export const reads: ToolHints = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
