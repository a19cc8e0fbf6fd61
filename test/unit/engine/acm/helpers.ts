import type { DslCompileOptions } from '../../../../src/engine/dsl/index.js';

export const DSL: DslCompileOptions = { lists: {}, internalDomains: [], internalCidrs: [], namedPatterns: {} };
