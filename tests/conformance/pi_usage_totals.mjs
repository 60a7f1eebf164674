// pi 1.6.0's own usage accounting over a session's entries (a JSON array on stdin): the totals
// getSessionStats adds up (agent-session.js: every entry's usage, with pi's addUsageToTotals) and
// getUsageCostBreakdown's per-model list (usage-totals.js), as JSON on stdout.
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [modulePath] = process.argv.slice(2);
const { addUsageToTotals, createUsageTotals, getUsageCostBreakdown } = await import(pathToFileURL(modulePath).href);
const entries = JSON.parse(readFileSync(0, "utf8"));
const totals = createUsageTotals();
for (const entry of entries) {
  // the same branches, in the same order, as AgentSession.getSessionStats
  if (entry.type === "usage") addUsageToTotals(totals, entry.usage);
  else if ((entry.type === "branch_summary" || entry.type === "compaction") && entry.usage) addUsageToTotals(totals, entry.usage);
  if (entry.type !== "message") continue;
  if (entry.message.role === "toolResult" && entry.message.usage) addUsageToTotals(totals, entry.message.usage);
  else if (entry.message.role === "assistant") addUsageToTotals(totals, entry.message.usage);
}
const tokens = totals.input + totals.output + totals.cacheRead + totals.cacheWrite;
process.stdout.write(JSON.stringify({ tokens, cost: totals.cost, breakdown: getUsageCostBreakdown(entries) }));
