// A page that calls the API, inside the Connect transport (connect-query's hooks find it there). Loaded beside the
// page's own chunk (app.tsx), so that the overview, which makes no Connect call, does not wait for Connect.
import { TransportProvider } from "@connectrpc/connect-query";
import type { ComponentType } from "react";
import { transport } from "./transport";

export function connected<P extends object>(Page: ComponentType<P>): ComponentType<P> {
  return function Connected(props: P) {
    return (
      <TransportProvider transport={transport}>
        <Page {...props} />
      </TransportProvider>
    );
  };
}
