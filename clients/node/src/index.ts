export * from "./protocol";
export { SessionTreeClient } from "./client";
export { HeldContext, type HeldResult } from "./held";
export type {
  Cancellation,
  ClientOptions,
  LogMessage,
  MethodFunctions,
  MethodName,
  Params,
  Progress,
  RequestHandler,
  Result,
  SummarizeHandler,
  SummarizeRequest,
  WorkDoneProgress,
} from "./client";
export { daemonCommand, parseCommand } from "./command";
export { SessionTreeError, type ErrorName } from "./errors";
// ResponseError: what a request handler throws to answer with a chosen code (RequestCancelled).
export {
  CancellationTokenSource,
  Emitter,
  ResponseError,
  type CancellationToken,
  type Disposable,
  type Event,
} from "vscode-jsonrpc/node";
