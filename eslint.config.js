import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.services/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      'no-eval': 'error',
      'no-new-func': 'error',
      'no-implied-eval': 'error',
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // The engine is pure: clock, state and I/O are passed in.
    files: ['src/engine/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            { name: 'node:fs', message: 'The engine is pure: files are read by src/adapters/fs and passed in.' },
            { name: 'node:fs/promises', message: 'The engine is pure: files are read by src/adapters/fs and passed in.' },
            { name: 'fs', message: 'The engine is pure: files are read by src/adapters/fs and passed in.' },
          ],
          patterns: ['kafkajs', 'ioredis', '@clickhouse/*', 'node:http', 'node:https', 'undici', '**/adapters/**', '**/consumers/**', '**/process/**', '**/config/**', '**/contracts/**', '**/cli/**'],
        },
      ],
      'no-restricted-properties': ['error', { object: 'Date', property: 'now', message: 'Pass a Clock into the engine.' }],
    },
  },
  {
    // Adapters are edges: they get their settings through constructors and know nothing of stages or processes.
    files: ['src/adapters/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: ['**/config/**', '**/consumers/**', '**/process/**', '**/cli/**'] }],
    },
  },
  {
    // Wire contracts depend on the engine's types only.
    files: ['src/contracts/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: ['kafkajs', 'ioredis', 'undici', '@clickhouse/*', '**/adapters/**', '**/consumers/**', '**/process/**', '**/config/**', '**/cli/**'] }],
    },
  },
);
