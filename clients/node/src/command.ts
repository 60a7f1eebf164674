/**
 * Which program to run as the daemon. Editors and tests rarely have `sessiontree` on PATH (it
 * lives in a virtualenv), so the environment can name it:
 *
 * - `SESSIONTREE_COMMAND`: the whole command, as a JSON array (`["/venv/bin/python", "-m",
 *   "sessiontree", "serve"]`) or words separated by spaces (`sessiontree serve --debug`);
 * - `SESSIONTREE_PYTHON`: a Python that has the package installed (`python -m sessiontree serve`);
 * - otherwise `sessiontree serve` from PATH.
 */
export function daemonCommand(env: NodeJS.ProcessEnv = process.env): string[] {
  const command = env.SESSIONTREE_COMMAND?.trim();
  if (command) return parseCommand(command);
  const python = env.SESSIONTREE_PYTHON?.trim();
  if (python) return [python, "-m", "sessiontree", "serve"];
  return ["sessiontree", "serve"];
}

export function parseCommand(text: string): string[] {
  if (text.startsWith("[")) {
    const parsed: unknown = JSON.parse(text);
    if (!Array.isArray(parsed) || parsed.length === 0 || !parsed.every((word) => typeof word === "string")) {
      throw new Error(`SESSIONTREE_COMMAND must be a non-empty JSON array of strings: ${text}`);
    }
    return parsed as string[];
  }
  return text.split(/\s+/).filter((word) => word.length > 0);
}
