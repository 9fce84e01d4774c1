// Types of scripts/build.mjs for the TypeScript that imports it (the tests).
export const ROOT: string;
export const DIST: string;
export function log(level: "info" | "warn" | "error", msg: string, fields?: Record<string, unknown>): void;
export function ensureConsoleBuilt(): Promise<"current" | "built" | "unavailable">;
export function ensureBuilt(options?: { snapshot?: boolean }): Promise<"current" | "built" | "unavailable">;
