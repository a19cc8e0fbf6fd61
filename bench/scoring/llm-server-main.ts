/** The stand-in LLM in its own process (a real LLM is remote too): prints its URL, runs until killed. */
import { startLlmServer } from '../../test/support/llm-server.js';

const delayMs = Number(process.argv[2] ?? 200);
const srv = await startLlmServer({ kind: 'score', score: 0.8, delayMs });
process.stdout.write(`${srv.url}\n`);
process.on('SIGTERM', () => void srv.close().then(() => process.exit(0)));
