/** What every section builder shares: where the config's relative paths start and which variables set a value. */
import { resolve } from 'node:path';

export interface SectionContext {
  /** The config file's folder; the working directory when there is no file. */
  base: string;
  /** True when the environment variable `name` gave its setting's value. */
  fromEnv(name: string): boolean;
}

/** A path from the file is relative to the file, like every path in it; one from the environment (`envName`) to the working directory. */
export function settingPath(ctx: SectionContext, envName: string, path: string): string {
  return resolve(ctx.fromEnv(envName) ? process.cwd() : ctx.base, path);
}
