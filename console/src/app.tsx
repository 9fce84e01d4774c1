// The signed-in console: server state through TanStack Query and connect-query, pages loaded on first use.
import { TransportProvider } from "@connectrpc/connect-query";
import { Center, Loader } from "@mantine/core";
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { lazy, Suspense } from "react";
import { type Access, useAccess } from "./access";
import { useI18n } from "./i18n";
import { RouterProvider, useRouter } from "./router";
import { Shell } from "./shell";
import { transport } from "./transport";
import { ApiError, EmptyState } from "./ui";

const queryClient = new QueryClient({ defaultOptions: { queries: { retry: 1, refetchOnWindowFocus: false, staleTime: 10_000 } } });

const Home = lazy(() => import("./pages/home"));
const Users = lazy(() => import("./pages/users"));
const UserNew = lazy(() => import("./pages/user-new"));
const UserDetail = lazy(() => import("./pages/user-detail"));
const Orgs = lazy(() => import("./pages/orgs"));
const OrgDetail = lazy(() => import("./pages/org-detail"));
const Projects = lazy(() => import("./pages/projects"));
const ProjectDetail = lazy(() => import("./pages/project-detail"));
const AppWizard = lazy(() => import("./pages/app-wizard"));
const Events = lazy(() => import("./pages/events"));
const Settings = lazy(() => import("./pages/settings"));
const Admins = lazy(() => import("./pages/admins"));
const NotFound = lazy(() => import("./pages/not-found"));

/** A route, the page, and who may open it (others see "no access"; the API would refuse them anyway). */
const ROUTES: [RegExp, React.ComponentType<{ params: string[] }>, ((a: Access) => boolean)?][] = [
  [/^\/$/, Home],
  [/^\/users$/, Users, (a) => a.users],
  [/^\/users\/new$/, UserNew, (a) => a.users],
  [/^\/users\/([^/]+)$/, UserDetail, (a) => a.users],
  [/^\/orgs$/, Orgs, (a) => a.orgs],
  [/^\/orgs\/([^/]+)$/, OrgDetail, (a) => a.orgs],
  [/^\/projects$/, Projects, (a) => a.projects],
  [/^\/projects\/([^/]+)\/apps\/new$/, AppWizard, (a) => a.projects],
  [/^\/projects\/([^/]+)$/, ProjectDetail, (a) => a.projects],
  [/^\/events$/, Events, (a) => a.events],
  [/^\/settings$/, Settings, (a) => a.instance],
  [/^\/admins$/, Admins, (a) => a.instance],
];

function NoAccess() {
  const { t } = useI18n();
  return <EmptyState title={t("noAccess.title")} hint={t("noAccess.hint")} />;
}

function Page({ access }: { access: Access | undefined }) {
  const { path } = useRouter();
  for (const [re, Component, may] of ROUTES) {
    const m = re.exec(path.replace(/(.)\/+$/, "$1"));
    if (!m) continue;
    if (may && !access) return <Loader m="xl" />;
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
    <TransportProvider transport={transport}>
      <QueryClientProvider client={queryClient}>
        <RouterProvider>
          <Signed />
        </RouterProvider>
      </QueryClientProvider>
    </TransportProvider>
  );
}
