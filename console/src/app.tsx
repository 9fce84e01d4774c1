// The signed-in console: server state through TanStack Query and connect-query, pages loaded on first use.
import { TransportProvider } from "@connectrpc/connect-query";
import { Center, Loader } from "@mantine/core";
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { lazy, Suspense } from "react";
import { useAccess } from "./access";
import { RouterProvider, useRouter } from "./router";
import { Shell } from "./shell";
import { transport } from "./transport";
import { ApiError } from "./ui";

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
const NotFound = lazy(() => import("./pages/not-found"));

const ROUTES: [RegExp, React.ComponentType<{ params: string[] }>][] = [
  [/^\/$/, Home],
  [/^\/users$/, Users],
  [/^\/users\/new$/, UserNew],
  [/^\/users\/([^/]+)$/, UserDetail],
  [/^\/orgs$/, Orgs],
  [/^\/orgs\/([^/]+)$/, OrgDetail],
  [/^\/projects$/, Projects],
  [/^\/projects\/([^/]+)\/apps\/new$/, AppWizard],
  [/^\/projects\/([^/]+)$/, ProjectDetail],
  [/^\/events$/, Events],
];

function Page() {
  const { path } = useRouter();
  for (const [re, Component] of ROUTES) {
    const m = re.exec(path.replace(/(.)\/+$/, "$1"));
    if (m) return <Component params={m.slice(1).map(decodeURIComponent)} />;
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
        <Page />
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
