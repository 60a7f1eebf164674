import { ResponseError } from "vscode-jsonrpc/node";
import { ErrorCodes } from "./protocol";

export type ErrorName = keyof typeof ErrorCodes;

const namesByCode = new Map<number, ErrorName>(
  Object.entries(ErrorCodes).map(([name, code]) => [code, name as ErrorName]),
);

/**
 * An error answer of the daemon. `name` is the code's name in protocol.md's table
 * ("EntryNotFound", "LeafConflict", ...), so callers can branch on it without magic numbers;
 * `data` is the daemon's `data` object (for its own errors `{error, ...fields}`).
 */
export class SessionTreeError extends Error {
  override readonly name: ErrorName | "UnknownError";

  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = namesByCode.get(code) ?? "UnknownError";
  }

  is(name: ErrorName): boolean {
    return this.code === ErrorCodes[name];
  }
}

/** vscode-jsonrpc rejects with ResponseError; callers get the protocol's error instead. */
export function fromWire(error: unknown): unknown {
  if (error instanceof ResponseError) return new SessionTreeError(error.code, error.message, error.data);
  return error;
}
