// CPU time of the services' processes (the broker, Redis) from /proc, for bench:ingress's per-trace CPU split: on a
// 2-core machine every process of a path competes for the same cores, so a path's cost is the sum over them.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const TICK_US = 10_000; // USER_HZ is 100 on Linux

/** The broker's pid as recorded by scripts/services.sh, or undefined (another setup, e.g. CI's own services). */
export function brokerPid(): number | undefined {
  const dir = process.env.STEWARD_SERVICES_DIR ?? join(process.cwd(), '.services');
  try {
    const pid = Number(readFileSync(join(dir, 'kafka', 'kafka.pid'), 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** User + system CPU of a process in µs (0 when it cannot be read). */
export function processCpuUs(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * TICK_US; // utime, stime (fields 14, 15 of stat)
  } catch {
    return 0;
  }
}

/** Redis' own CPU (INFO cpu) in µs: every client's commands included. */
export async function redisCpuUs(info: () => Promise<string>): Promise<number> {
  const text = await info();
  const user = Number(/^used_cpu_user:([0-9.]+)/m.exec(text)?.[1] ?? 0);
  const sys = Number(/^used_cpu_sys:([0-9.]+)/m.exec(text)?.[1] ?? 0);
  return (user + sys) * 1e6;
}
