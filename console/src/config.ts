// What svc tells the console in the index page's meta element (src/http/console): its OIDC client and issuer.
export interface ConsoleSettings {
  clientId: string;
  issuer: string;
  base: string;
}

function read(): ConsoleSettings {
  const content = document.querySelector<HTMLMetaElement>('meta[name="svc-console"]')?.content;
  // Served by `vite` for development: svc's defaults.
  if (!content) return { clientId: "", issuer: location.origin, base: "/ui/console" };
  return JSON.parse(content) as ConsoleSettings;
}

export const settings = read();
/** Absolute URL of a console route. */
export const consoleUrl = (route: string) => `${settings.issuer.replace(/\/+$/, "")}${settings.base}${route}`;
