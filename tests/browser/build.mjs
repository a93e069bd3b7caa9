// Bundles the chat pages into the folder given as the first argument:
// ui.html (AI SDK 6 useChat) and agui.html (@ag-ui/client), with their
// scripts and style. tests/integrations/test_frontends_browser.py runs it once
// per test session. The pages share src/common.jsx (chat id, composer, tool card):
// a later step (a tool the page runs, shared state) is one more component there
// or in a page; a new page is one more entry point and HTML file below.
import { copyFileSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const out = process.argv[2];
if (!out) throw new Error("usage: node build.mjs OUTDIR");
mkdirSync(out, { recursive: true });
await build({
  entryPoints: [join(here, "src", "ui_chat.jsx"), join(here, "src", "agui_chat.jsx")],
  bundle: true,
  format: "esm",
  jsx: "automatic",
  target: "es2022",
  outdir: out,
  define: { "process.env.NODE_ENV": '"production"' },
  logLevel: "warning",
});
for (const file of ["ui.html", "agui.html", "chat.css"]) {
  copyFileSync(join(here, "src", file), join(out, file));
}
