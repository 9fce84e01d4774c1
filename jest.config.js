import { availableParallelism } from "node:os";

/** @type {import("jest").Config} */
const config = {
  testEnvironment: "node",
  testMatch: ["<rootDir>/test/**/*.test.ts"],
  extensionsToTreatAsEsm: [".ts"],
  moduleNameMapper: { "^(\\.{1,2}/.*)\\.js$": "$1" },
  transform: {
    "^.+\\.ts$": ["@swc/jest", { jsc: { parser: { syntax: "typescript" }, target: "es2022" } }],
  },
  testTimeout: 60_000,
  // Time-measuring files run after all others (test/support/sequencer.cjs).
  testSequencer: "<rootDir>/test/support/sequencer.cjs",
  workerIdleMemoryLimit: "1GB",
  // Two workers at least: Jest's default (cores - 1) is one worker on a 2-core machine, which left the second core
  // idle while a file waited on PostgreSQL, a browser, a child process or a timer. Each file has its own database and
  // random ports, so files run side by side safely. Measured on the 2-core CI machine (2 December 2026, all 184 files
  // on PostgreSQL): one worker 2,051 s of jest, two workers 875 s (with other work on the machine), all passing.
  maxWorkers: Math.max(2, availableParallelism() - 1),
};

export default config;
