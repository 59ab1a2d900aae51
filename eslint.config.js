// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/', '.cache/', '.venv/', 'data/'] },
  js.configs.recommended,
  { files: ['bin/**/*.js'], languageOptions: { globals: { process: 'readonly' } } },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(fs|path|os|crypto|http|https|net|url|util|child_process|events|stream|timers|assert|zlib|readline|worker_threads)(/.*)?$',
              message: 'Use the node: prefix for built-in modules.',
            },
          ],
        },
      ],
    },
  },
  {
    // Domain and storage never import Fastify (architecture.md: imports point downwards only).
    files: ['src/descriptors/**', 'src/store/**', 'src/catalog/**', 'src/auth/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [{ name: 'fastify', message: 'Domain and storage code never import Fastify.' }],
          patterns: [
            { group: ['fastify-plugin', '@fastify/*'], message: 'Domain and storage code never import Fastify.' },
            {
              regex: '^(fs|path|os|crypto|http|https|net|url|util|child_process|events|stream|timers|assert|zlib|readline|worker_threads)(/.*)?$',
              message: 'Use the node: prefix for built-in modules.',
            },
          ],
        },
      ],
    },
  },
);
