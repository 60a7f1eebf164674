// What pi-ai's openai-completions client would send for given contexts, without sending anything.
//
// Usage: node pi_request.mjs CASES.json
// CASES.json: {model, contexts: [[LlmMessage]]}: `model` as pi's models.json describes it (with
// `baseUrl`, `api`, `provider`), each context the messages of a `session/context` in format "llm".
// stdout: one JSON list, per context the request body ({messages, tools, …}) pi-ai built for it.
// The body is taken by the client's own onPayload hook; the hook then stops the request.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { PI_AI_DIR } from "./pi_package.mjs";

const { stream } = await import(pathToFileURL(join(PI_AI_DIR, "dist", "api", "openai-completions.js")).href);

class Captured extends Error {}

async function requestFor(model, messages) {
  let body;
  const events = stream(model, { messages }, {
    apiKey: "scripted",
    maxTokens: model.maxTokens,
    onPayload: (params) => {
      body = params;
      throw new Captured("captured");
    },
  });
  for await (const _event of events) {
    // drained: the hook's throw ends the stream with an error event
  }
  if (body === undefined) throw new Error("pi-ai built no request");
  return JSON.parse(JSON.stringify(body));
}

const { model, contexts } = JSON.parse(readFileSync(process.argv[2], "utf8"));
const out = [];
for (const messages of contexts) out.push(await requestFor(model, messages));
process.stdout.write(JSON.stringify(out));
