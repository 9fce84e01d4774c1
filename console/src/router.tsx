// Client routes under the console's base path, on the History API (svc answers every such path with the index page).
import { createContext, type MouseEvent, type ReactNode, useCallback, useContext, useEffect, useMemo, useState } from "react";
import { settings } from "./config";

interface Router {
  /** The path below the base, starting with "/". */
  path: string;
  search: URLSearchParams;
  navigate(to: string, options?: { replace?: boolean }): void;
}

const RouterContext = createContext<Router | null>(null);

const current = () => {
  const p = location.pathname.startsWith(settings.base) ? location.pathname.slice(settings.base.length) : location.pathname;
  return { path: p === "" ? "/" : p, search: new URLSearchParams(location.search) };
};

export function RouterProvider({ children }: { children: ReactNode }) {
  const [location_, setLocation] = useState(current);
  useEffect(() => {
    const onPop = () => setLocation(current());
    addEventListener("popstate", onPop);
    return () => removeEventListener("popstate", onPop);
  }, []);
  const navigate = useCallback((to: string, options?: { replace?: boolean }) => {
    const url = `${settings.base}${to}`;
    if (options?.replace) history.replaceState(null, "", url);
    else history.pushState(null, "", url);
    setLocation(current());
    scrollTo(0, 0);
  }, []);
  const value = useMemo(() => ({ ...location_, navigate }), [location_, navigate]);
  return <RouterContext.Provider value={value}>{children}</RouterContext.Provider>;
}

export function useRouter(): Router {
  const r = useContext(RouterContext);
  if (!r) throw new Error("useRouter outside RouterProvider");
  return r;
}

/** Props for an anchor (or a Mantine component rendered as one) that navigates inside the console. */
export function useLink(to: string): { href: string; onClick(e: MouseEvent): void } {
  const { navigate } = useRouter();
  return {
    href: `${settings.base}${to}`,
    onClick(e: MouseEvent) {
      if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
      e.preventDefault();
      navigate(to);
    },
  };
}

/** Matches "/users/:id" against a path; the parameters or null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const a = pattern.split("/");
  const b = path.replace(/\/+$/, "").split("/");
  if (a.length !== b.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < a.length; i++) {
    const p = a[i] as string;
    const v = b[i] as string;
    if (p.startsWith(":")) params[p.slice(1)] = decodeURIComponent(v);
    else if (p !== v) return null;
  }
  return params;
}
