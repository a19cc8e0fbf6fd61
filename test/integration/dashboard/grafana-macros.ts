// The Grafana ClickHouse datasource plugin's macros, expanded as the plugin does (grafana/clickhouse-datasource,
// pkg/macros/macros.go): times in whole seconds (toDateTime(unix)), *_ms forms with fromUnixTimestamp64Milli,
// interval in whole seconds (at least 1). A macro the plugin does not know fails the expansion.
export interface GrafanaQueryContext {
  fromMs: number;
  toMs: number;
  intervalMs: number;
}

const sec = (ms: number) => Math.floor(ms / 1000);

export function expandGrafanaMacros(sql: string, q: GrafanaQueryContext): string {
  const dt = (ms: number) => `toDateTime(${sec(ms)})`;
  const dt64 = (ms: number) => `fromUnixTimestamp64Milli(${ms})`;
  const date = (ms: number) => `toDate('${new Date(ms).toISOString().slice(0, 10)}')`;
  const one = (name: string, args: string[]) => {
    if (args.length !== 1) throw new Error(`$__${name}: expected 1 argument, received ${args.length}`);
    return args[0]!;
  };
  const seconds = Math.max(1, Math.floor(q.intervalMs / 1000));
  const macros: Record<string, (args: string[]) => string> = {
    fromTime: () => dt(q.fromMs),
    toTime: () => dt(q.toMs),
    fromTime_ms: () => dt64(q.fromMs),
    toTime_ms: () => dt64(q.toMs),
    timeFilter: (a) => `${one('timeFilter', a)} >= ${dt(q.fromMs)} AND ${a[0]} <= ${dt(q.toMs)}`,
    timeFilter_ms: (a) => `${one('timeFilter_ms', a)} >= ${dt64(q.fromMs)} AND ${a[0]} <= ${dt64(q.toMs)}`,
    dateFilter: (a) => `${one('dateFilter', a)} >= ${date(q.fromMs)} AND ${a[0]} <= ${date(q.toMs)}`,
    timeInterval: (a) => `toStartOfInterval(toDateTime(${one('timeInterval', a)}), INTERVAL ${seconds} second)`,
    timeInterval_ms: (a) => `toStartOfInterval(toDateTime64(${one('timeInterval_ms', a)}, 3), INTERVAL ${Math.max(1, q.intervalMs)} millisecond)`,
    interval_s: () => String(seconds),
  };
  return sql.replace(/\$__([A-Za-z_]+)(?:\(([^()]*)\))?/g, (_m, name: string, args: string | undefined) => {
    const f = macros[name];
    if (!f) throw new Error(`unknown macro $__${name}`);
    return f(args === undefined ? [] : args.split(',').map((s) => s.trim()));
  });
}
