// The API's own message for a refused call (shown where it happened). Without importing Connect: the first route
// (the overview) shows errors too and makes no Connect call, so it does not load Connect.

/** A ConnectError's message without its "[code]" prefix; any other error's message. */
export function apiMessage(err: unknown): string {
  if (err && typeof err === "object" && "rawMessage" in err && typeof err.rawMessage === "string") return err.rawMessage;
  return err instanceof Error ? err.message : String(err);
}
