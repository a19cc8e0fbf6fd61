import { MemoryTrustDebtStore } from '../../../../src/engine/trust-debt/index.js';
import { describeTrustDebtStore } from './store-suite.js';

describeTrustDebtStore('memory', async () => new MemoryTrustDebtStore());
