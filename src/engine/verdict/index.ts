export { buildVerdict, type VerdictInput } from './build.js';
export { Ed25519Signer, keyIdOf, signVerdict, signingBytes, verifyVerdict, type VerdictSignature, type VerdictSigner, type VerifyResult } from './sign.js';
export { embedInAdpStep, type AdpStep } from './adp.js';
