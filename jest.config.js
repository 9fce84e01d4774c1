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
};

export default config;
