// The v2 API over Connect (JSON) on svc's own origin, with the access token; a call refused as unauthenticated is
// retried once after a refresh (the token may have expired while the tab slept).
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { accessToken, refresh, signIn } from "./auth";
import { settings } from "./config";

const bearer: Interceptor = (next) => async (req) => {
  const send = () => {
    const token = accessToken();
    if (token) req.header.set("authorization", `Bearer ${token}`);
    return next(req);
  };
  try {
    return await send();
  } catch (err) {
    if (!(err instanceof ConnectError) || err.code !== Code.Unauthenticated) throw err;
    try {
      await refresh();
    } catch {
      return signIn();
    }
    return send();
  }
};

export const transport = createConnectTransport({ baseUrl: new URL(settings.issuer).origin, interceptors: [bearer] });

export { apiMessage } from "./api-message";

export function isDenied(err: unknown): boolean {
  return err instanceof ConnectError && (err.code === Code.PermissionDenied || err.code === Code.NotFound);
}
