/** The dashboard page: a shell the script (page-script.ts) fills from the JSON API. No external resources. */
export const PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Steward dashboard</title>
<link rel="stylesheet" href="/assets/uPlot.min.css">
<style>
  :root { color-scheme: light; --fg: #1d2330; --muted: #667085; --line: #e4e7ec; --bg: #f7f8fa; --bad: #b42318; --ok: #067647; }
  * { box-sizing: border-box; }
  body { margin: 0; font: 13px/1.4 system-ui, sans-serif; color: var(--fg); background: var(--bg); }
  header { display: flex; gap: 16px; align-items: center; padding: 10px 16px; background: #fff; border-bottom: 1px solid var(--line); position: sticky; top: 0; z-index: 5; }
  header h1 { font-size: 16px; margin: 0; }
  header .status { color: var(--muted); margin-left: auto; }
  main { display: grid; grid-template-columns: repeat(auto-fill, minmax(560px, 1fr)); gap: 12px; padding: 12px 16px; }
  .panel { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px; min-width: 0; overflow: auto; }
  .panel h2 { font-size: 13px; margin: 0 0 8px; }
  .panel .note { color: var(--muted); font-style: italic; }
  table { border-collapse: collapse; width: 100%; font-size: 12px; }
  th, td { text-align: left; padding: 2px 6px; border-bottom: 1px solid var(--line); white-space: nowrap; }
  td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
  .firing { color: var(--bad); font-weight: 600; }
  .bar { height: 12px; background: #4e79a7; display: inline-block; vertical-align: middle; }
  #drill, #story { grid-column: 1 / -1; }
  .hidden { display: none; }
  a { color: #175cd3; cursor: pointer; }
  .badge { padding: 1px 6px; border-radius: 8px; font-weight: 600; }
  .badge.verified, .badge.hash_only { background: #dcfae6; color: var(--ok); }
  .badge.tampered, .badge.hash_mismatch, .badge.missing { background: #fee4e2; color: var(--bad); }
  pre { white-space: pre-wrap; word-break: break-all; max-height: 240px; overflow: auto; background: var(--bg); padding: 6px; }
</style>
</head>
<body data-refresh-ms="__REFRESH_MS__">
<header>
  <h1>Steward</h1>
  <label>Range <select id="range">
    <option value="1h">last hour</option><option value="6h">6 hours</option><option value="24h" selected>24 hours</option>
    <option value="7d">7 days</option><option value="30d">30 days</option><option value="all">all data</option>
  </select></label>
  <label><input type="checkbox" id="live" checked> live</label>
  <span class="status" id="status">loading…</span>
</header>
<main id="panels">
  <section class="panel hidden" id="drill" data-panel="drill"></section>
  <section class="panel hidden" id="story" data-panel="story"></section>
</main>
<script src="/assets/uPlot.iife.min.js"></script>
<script src="/assets/dashboard.js"></script>
</body>
</html>
`;
