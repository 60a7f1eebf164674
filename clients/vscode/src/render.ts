import type { ContextResult } from "sessiontree-client";

/**
 * The context at a leaf as text for people: the same lines as `sessiontree context`
 * (server/sessiontree/render.py), a header per message and then its text. A test compares the
 * two on the same sessions.
 */
export function contextLines(context: ContextResult): string[] {
  const model = (context.model ?? {}) as Record<string, unknown>;
  const modelName =
    ["provider", "modelId"]
      .filter((key) => truthy(model[key]))
      .map((key) => pyStr(model[key]))
      .join("/") || "none";
  const lines = [`# model: ${modelName}  thinking: ${context.thinkingLevel || "off"}  leaf: ${pyStr(context.leafId)}`];
  for (const message of context.messages as Record<string, unknown>[]) {
    lines.push("", `── ${header(message)} ──`);
    const body = splitLines(bodyOf(message));
    lines.push(...(body.length > 0 ? body : [""]));
  }
  return lines;
}

/** The whole document: each line ended, as the command prints it. */
export function renderContext(context: ContextResult): string {
  return contextLines(context).join("\n") + "\n";
}

function header(message: Record<string, unknown>): string {
  const role = pyStr(message.role ?? "?");
  for (const key of ["toolName", "customType", "command"]) {
    if (truthy(message[key])) return `${role} (${pyStr(message[key])})`;
  }
  return role;
}

function bodyOf(message: Record<string, unknown>): string {
  const role = message.role;
  if (role === "branchSummary" || role === "compactionSummary") return pyStr(message.summary ?? "");
  if (role === "bashExecution") return `$ ${pyStr(message.command ?? "")}\n${pyStr(message.output ?? "")}`;
  return contentText(message.content);
}

function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return content === null || content === undefined ? "" : pyStr(content);
  return content.map(blockText).join("\n");
}

function blockText(block: unknown): string {
  if (typeof block !== "object" || block === null || Array.isArray(block)) return pyStr(block);
  const fields = block as Record<string, unknown>;
  switch (fields.type) {
    case "text":
      return pyStr(fields.text ?? "");
    case "thinking":
      return `[thinking] ${pyStr(fields.thinking ?? "")}`;
    case "toolCall":
      return `[tool call ${pyStr(fields.name ?? "?")}] ${JSON.stringify(fields.arguments ?? {})}`;
    case "image":
      return `[image ${pyStr(fields.mimeType ?? "")}]`.replace(" ]", "]");
    default:
      return `[${pyStr(fields.type)}]`;
  }
}

/** Python's str.splitlines: every line boundary it knows, no empty line after a final one. */
function splitLines(text: string): string[] {
  const lines = text.split(/\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]/);
  if (lines.at(-1) === "") lines.pop();
  return lines;
}

function truthy(value: unknown): boolean {
  if (Array.isArray(value)) return value.length > 0;
  if (typeof value === "object" && value !== null) return Object.keys(value).length > 0;
  return Boolean(value);
}

/** Python's str() for the JSON values a message holds (strings as they are). */
function pyStr(value: unknown): string {
  if (typeof value === "string") return value;
  if (value === null || value === undefined) return "None";
  if (value === true) return "True";
  if (value === false) return "False";
  if (typeof value === "number") return String(value);
  return JSON.stringify(value);
}
