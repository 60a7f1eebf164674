// How soon an exported page shows in headless chromium: first-contentful-paint's startTime, when the
// page first answers a script (its main thread free), and the load event, each page in a fresh tab.
//   node tests/benchmarks/export_page.cjs PAGE.html...
// playwright-core comes from the VS Code extension's e2e dependencies (make vscode-e2e-deps), or from
// $PLAYWRIGHT_CORE (its directory).
const path = require('node:path');
const { chromium } = require(
  process.env.PLAYWRIGHT_CORE || path.join(__dirname, '../../clients/vscode/e2e/node_modules/playwright-core'),
);

const LIMIT = 400_000; // ms: a page that has not loaded by then is reported as such

async function measure(browser, file) {
  const page = await browser.newPage({ viewport: { width: 1000, height: 1600 } });
  const start = Date.now();
  await page.goto('file://' + path.resolve(file), { waitUntil: 'commit', timeout: LIMIT });
  const paint = await page
    .waitForFunction(() => performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? null, null,
      { timeout: LIMIT, polling: 50 })
    .then((found) => found.jsonValue());
  const answers = Date.now() - start;
  const loaded = await page.waitForLoadState('load', { timeout: LIMIT }).then(() => Date.now() - start, () => null);
  await page.close();
  const seconds = (ms) => (ms === null ? `> ${LIMIT / 1000} s` : `${(ms / 1000).toFixed(2)} s`);
  return `${file}\tfirst paint ${seconds(paint)}\tanswers ${seconds(answers)}\tload ${seconds(loaded)}`;
}

(async () => {
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu'] });
  try {
    for (const file of process.argv.slice(2)) console.log(await measure(browser, file));
  } finally {
    await browser.close();
  }
})();
