// The signed-in console: server state through TanStack Query and connect-query, pages loaded on first use. Connect
// comes with the first page that calls the API (connected.tsx, loaded beside the page's chunk), not with the overview.
import { Center, Loader } from "@mantine/core";
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { type ComponentType, lazy, Suspense } from "react";
import { type Access, useAccess } from "./access";
import { useI18n } from "./i18n";
import { RouterProvider, useRouter } from "./router";
import { Shell } from "./shell";
import { ApiError, EmptyState } from "./ui";

export const queryClient = new QueryClient({ defaultOptions: { queries: { retry: 1, refetchOnWindowFocus: false, staleTime: 10_000 } } });

type PageComponent = ComponentType<{ params: string[] }>;
/** Each page's chunk loader, to fetch it while the access question is still out (not after). */
const loaders = new WeakMap<object, () => Promise<unknown>>();
function page(load: () => Promise<{ default: PageComponent }>, api = true): PageComponent {
  const withApi = async () => {
    const [m, c] = await Promise.all([load(), import("./connected")]);
    return { default: c.connected(m.default) };
  };
  const component = lazy(api ? withApi : load);
  loaders.set(component, api ? withApi : load);
  return component;
}

const Home = page(() => import("./pages/home"), false);
const Users = page(() => import("./pages/users"));
const UserNew = page(() => import("./pages/user-new"));
const UserDetail = page(() => import("./pages/user-detail"));
const Orgs = page(() => import("./pages/orgs"));
const OrgDetail = page(() => import("./pages/org-detail"));
const Projects = page(() => import("./pages/projects"));
const ProjectDetail = page(() => import("./pages/project-detail"));
const AppWizard = page(() => import("./pages/app-wizard"));
const Events = page(() => import("./pages/events"));
const Settings = page(() => import("./pages/settings"));
const Admins = page(() => import("./pages/admins"));
const AppDetail = page(() => import("./pages/app-detail"));
const Idps = page(() => import("./pages/idps"));
const IdpNew = page(() => import("./pages/idp-form").then((m) => ({ default: m.IdpNew })));
const IdpDetail = page(() => import("./pages/idp-form"));
const Actions = page(() => import("./pages/actions"));
const Branding = page(() => import("./pages/branding"));
const NotFound = page(() => import("./pages/not-found"), false);

/** A route, the page, and who may open it (others see "no access"; the API would refuse them anyway): a page that
 * only creates needs the permission to create somewhere. */
const ROUTES: [RegExp, React.ComponentType<{ params: string[] }>, ((a: Access) => boolean)?][] = [
  [/^\/$/, Home],
  [/^\/users$/, Users, (a) => a.users],
  [/^\/users\/new$/, UserNew, (a) => a.can("user.write")],
  [/^\/users\/([^/]+)$/, UserDetail, (a) => a.users],
  [/^\/orgs$/, Orgs, (a) => a.orgs],
  [/^\/orgs\/([^/]+)$/, OrgDetail, (a) => a.orgs],
  [/^\/orgs\/([^/]+)\/idps\/new\/(oidc|saml)$/, IdpNew, (a) => a.can("idp.write")],
  [/^\/orgs\/([^/]+)\/idps\/([^/]+)$/, IdpDetail, (a) => a.orgs],
  [/^\/projects$/, Projects, (a) => a.projects],
  [/^\/projects\/([^/]+)\/apps\/new$/, AppWizard, (a) => a.can("project.app.write")],
  [/^\/projects\/([^/]+)\/apps\/([^/]+)$/, AppDetail, (a) => a.projects],
  [/^\/projects\/([^/]+)$/, ProjectDetail, (a) => a.projects],
  [/^\/events$/, Events, (a) => a.events],
  [/^\/settings$/, Settings, (a) => a.instance],
  [/^\/settings\/branding$/, Branding, (a) => a.instance],
  [/^\/idps$/, Idps, (a) => a.instance],
  [/^\/idps\/new\/(oidc|saml)$/, IdpNew, (a) => a.instanceWrite],
  [/^\/idps\/([^/]+)$/, IdpDetail, (a) => a.instance],
  [/^\/actions$/, Actions, (a) => a.instance],
  [/^\/admins$/, Admins, (a) => a.instance],
];

/** Starts fetching the chunk of the page at `path` (before the first render asks for it). */
export function preloadRoute(path: string): void {
  const route = ROUTES.find(([re]) => re.test(path.replace(/(.)\/+$/, "$1")));
  if (route) void loaders.get(route[1])?.();
}

function NoAccess() {
  const { t } = useI18n();
  return <EmptyState title={t("noAccess.title")} hint={t("noAccess.hint")} />;
}

function Page({ access }: { access: Access | undefined }) {
  const { path } = useRouter();
  for (const [re, Component, may] of ROUTES) {
    const m = re.exec(path.replace(/(.)\/+$/, "$1"));
    if (!m) continue;
    if (may && !access) {
      void loaders.get(Component)?.();
      return <Loader m="xl" />;
    }
    if (may && access && !may(access)) return <NoAccess />;
    return <Component params={m.slice(1).map(decodeURIComponent)} />;
  }
  return <NotFound params={[]} />;
}

function Signed() {
  const access = useAccess();
  return (
    <Shell access={access.data}>
      <ApiError error={access.error} />
      <Suspense
        fallback={
          <Center py="xl">
            <Loader />
          </Center>
        }
      >
        <Page access={access.data} />
      </Suspense>
    </Shell>
  );
}

export function App() {
  return (
    <QueryClientProvider client={queryClient}>
      <RouterProvider>
        <Signed />
      </RouterProvider>
    </QueryClientProvider>
  );
}
