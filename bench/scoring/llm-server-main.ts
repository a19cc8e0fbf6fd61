/**
 * The stand-in LLM in its own process (a real LLM is remote too): prints its URL, runs until killed.
 * Arguments: the answer delay in ms (default 200), and optionally a fixed content to answer with (else a score).
 */
import { startLlmServer } from '../../test/support/llm-server.js';

const delayMs = Number(process.argv[2] ?? 200);
const content = process.argv[3];
const srv = await startLlmServer(content === undefined ? { kind: 'score', score: 0.8, delayMs } : { kind: 'content', content, delayMs });
process.stdout.write(`${srv.url}\n`);
process.on('SIGTERM', () => void srv.close().then(() => process.exit(0)));
