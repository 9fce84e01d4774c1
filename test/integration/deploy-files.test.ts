// Issue 26: the deployment files in deploy/, validated as far as a machine without a container engine allows (no
// Docker daemon, no Kubernetes cluster: docs/deployment.md says what is and is not checked). The Dockerfile parses and
// runs the release commands the tarball test runs (test/support/release.ts); compose.yaml and the Kubernetes manifests
// parse, the Kubernetes objects validate against the API's schemas (kubernetes-models) and fit together (selectors,
// ports, probes, the Secret's keys); the systemd unit passes `systemd-analyze verify` and its security review. The unit's
// ExecStart actually starting svc is in release-tarball.test.ts, which has the installed release.
import { execFile } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, test } from "@jest/globals";
import { DockerfileParser, type Instruction } from "dockerfile-ast";
import { Deployment } from "kubernetes-models/apps/v1";
import { HorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2";
import { Job } from "kubernetes-models/batch/v1";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1";
import { ConfigMap, Secret, Service, ServiceAccount } from "kubernetes-models/v1";
import { parse, parseAllDocuments } from "yaml";
import { fill, parseEnvironmentFile, parseUnit, RELEASE_COMMANDS } from "../support/release.js";
import { ROOT } from "../support/server.js";

const DEPLOY = path.join(ROOT, "deploy");
const read = (...p: string[]) => readFileSync(path.join(DEPLOY, ...p), "utf8");
const { version } = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { version: string };
/** What the code reads: every SVC_* name a deployment file sets must be one of these (a misspelt one is silently ignored). */
const CODE = ["src/config.ts", "bin/svc.js", "src/tracing/env.ts"].map((f) => readFileSync(path.join(ROOT, f), "utf8")).join("\n");
const expectKnownVariables = (names: string[]) => {
  for (const name of names.filter((n) => n.startsWith("SVC_"))) expect([name, CODE.includes(`"${name}"`) || CODE.includes(`.${name}`)]).toEqual([name, true]);
};
const words = (command: string, values: Record<string, string> = {}) => fill(command, values);

describe("deploy/Dockerfile", () => {
  const dockerfile = DockerfileParser.parse(read("Dockerfile"));
  const instructions = dockerfile.getInstructions();
  const text = (i: Instruction) => (i.getArgumentsContent() ?? "").replace(/\\\n\s*/g, " ").replace(/\s+/g, " ");
  const stages = dockerfile.getFROMs();
  const runtimeStart = stages.at(-1)?.getRange().start.line ?? 0;
  const inRuntime = (i: Instruction) => i.getRange().start.line > runtimeStart;
  const keyword = (k: string, runtime = true) => instructions.filter((i) => i.getKeyword() === k && inRuntime(i) === runtime);

  test("is multi-stage: a build stage makes the tarball, the runtime stage installs it from the build stage", () => {
    expect(stages.map((s) => s.getBuildStage())).toEqual(["build", "runtime"]);
    expect(stages[1]?.getImageName()).toBe("node");
    const buildRuns = keyword("RUN", false).map(text);
    expect(buildRuns.some((r) => r.includes(words(RELEASE_COMMANDS.pack, { dest: "/release" }).join(" ")))).toBe(true);
    const copy = keyword("COPY").find((i) => text(i).trim() === "/release/svc.tgz /tmp/svc.tgz");
    expect(copy && read("Dockerfile").split("\n")[copy.getRange().start.line]).toContain("--from=build");
  });

  test("runs the same npm install → svc start path as the tarball test, as a non-root user", () => {
    const install = words(RELEASE_COMMANDS.install, { prefix: "/opt/svc", tarball: "/tmp/svc.tgz" }).join(" ");
    expect(keyword("RUN").some((i) => text(i).includes(install))).toBe(true);
    const [cmd] = keyword("CMD");
    expect(JSON.parse(text(cmd as Instruction))).toEqual(words(RELEASE_COMMANDS.start));
    const [health] = keyword("HEALTHCHECK");
    const healthText = text(health as Instruction);
    expect(healthText.startsWith("CMD ")).toBe(true);
    expect(JSON.parse(healthText.slice(4))).toEqual(words(RELEASE_COMMANDS.healthcheck));
    const [user] = keyword("USER");
    expect(["", "root", "0"]).not.toContain(text(user as Instruction).trim());
  });

  test("listens on every address and writes only to its volumes", () => {
    const env = Object.fromEntries(
      keyword("ENV").flatMap((i) =>
        (i as unknown as { getProperties(): { getName(): string; getValue(): string }[] }).getProperties().map((p) => [p.getName(), p.getValue()]),
      ),
    );
    expect(env.SVC_HOST).toBe("0.0.0.0");
    expect(env.PATH?.split(":")[0]).toBe("/opt/svc/bin");
    expectKnownVariables(Object.keys(env));
    const volumes = JSON.parse(text(keyword("VOLUME")[0] as Instruction)) as string[];
    expect(volumes).toEqual(expect.arrayContaining([env.SVC_DATA_DIR, "/tmp"]));
    // The main port and the probes' port, which svc healthcheck asks.
    expect(
      text(keyword("EXPOSE")[0] as Instruction)
        .trim()
        .split(" "),
    ).toEqual([env.SVC_PORT, env.SVC_PROBE_PORT]);
  });
});

describe("deploy/compose.yaml", () => {
  const compose = parse(read("compose.yaml"), { merge: true }) as {
    services: Record<string, Record<string, unknown> & { environment?: Record<string, string>; depends_on?: Record<string, { condition: string }> }>;
  };
  const { postgres, migrate, svc, proxy } = compose.services;

  test("PostgreSQL, a migrate service running svc migrate first, two replicas of svc start behind a proxy", () => {
    expect(Object.keys(compose.services).sort()).toEqual(["migrate", "postgres", "proxy", "svc"]);
    expect(migrate?.command).toEqual(words(RELEASE_COMMANDS.migrate));
    expect(migrate?.depends_on?.postgres?.condition).toBe("service_healthy");
    expect(svc?.command).toEqual(words(RELEASE_COMMANDS.start));
    expect(svc?.deploy).toEqual({ replicas: 2 });
    expect(svc?.depends_on?.migrate?.condition).toBe("service_completed_successfully");
    expect((svc?.healthcheck as { test: string[] } | undefined)?.test).toEqual(["CMD", ...words(RELEASE_COMMANDS.healthcheck)]);
    expect(proxy?.depends_on?.svc?.condition).toBe("service_healthy");
    expect(postgres?.image).toMatch(/^postgres:\d+$/);
  });

  test("the image is this version's, built by deploy/Dockerfile, and runs read-only", () => {
    for (const s of [migrate, svc]) {
      expect(s?.image).toBe(`svc:${version}`);
      const build = s?.build as { context: string; dockerfile: string };
      expect(existsSync(path.resolve(DEPLOY, build.context, build.dockerfile))).toBe(true);
      expect(s?.read_only).toBe(true);
      expect(s?.tmpfs).toEqual(["/tmp"]);
      expect(s?.cap_drop).toEqual(["ALL"]);
    }
  });

  test("the replicas share the database and a required master key; the migrate job needs no key", () => {
    expect(svc?.environment?.SVC_DATABASE_URL).toMatch(/@postgres:5432\//);
    expect(svc?.environment?.SVC_DATABASE_URL).toBe(migrate?.environment?.SVC_DATABASE_URL);
    expect(svc?.environment?.SVC_MASTER_KEY).toMatch(/^\$\{SVC_MASTER_KEY:\?/);
    expect(migrate?.environment?.SVC_MASTER_KEY).toBeUndefined();
    expectKnownVariables([...Object.keys(svc?.environment ?? {}), ...Object.keys(migrate?.environment ?? {})]);
    // The proxy's upstream is the port the image listens on.
    const nginx = (parse(read("compose.yaml")) as { configs: { nginx: { content: string } } }).configs.nginx.content;
    expect(nginx).toContain("server svc:8080");
  });
});

describe("deploy/kubernetes (a kustomize base)", () => {
  const dir = path.join(DEPLOY, "kubernetes");
  const kustomization = parse(readFileSync(path.join(dir, "kustomization.yaml"), "utf8")) as {
    resources: string[];
    images: { name: string; newTag: string }[];
  };
  const MODELS: Record<string, unknown> = {
    "v1/ServiceAccount": ServiceAccount as never,
    "v1/ConfigMap": ConfigMap as never,
    "v1/Secret": Secret as never,
    "v1/Service": Service as never,
    "apps/v1/Deployment": Deployment as never,
    "batch/v1/Job": Job as never,
    "autoscaling/v2/HorizontalPodAutoscaler": HorizontalPodAutoscaler as never,
    "policy/v1/PodDisruptionBudget": PodDisruptionBudget as never,
  };
  type Obj = { apiVersion: string; kind: string; metadata: { name: string }; spec?: Record<string, unknown>; data?: Record<string, string> } & Record<
    string,
    unknown
  >;
  const objects = new Map<string, Obj>();
  const files = readdirSync(dir).filter((f) => f.endsWith(".yaml") && f !== "kustomization.yaml");
  for (const file of files) {
    for (const doc of parseAllDocuments(readFileSync(path.join(dir, file), "utf8"))) {
      expect(doc.errors).toEqual([]);
      const obj = doc.toJS() as Obj;
      objects.set(`${obj.kind}/${file}`, obj);
    }
  }
  const one = (kind: string) => [...objects.entries()].find(([k]) => k.startsWith(`${kind}/`))?.[1] as Obj;

  test("kustomization.yaml lists every manifest but the Secret's example, and pins this version's image", () => {
    expect([...kustomization.resources].sort()).toEqual(files.filter((f) => f !== "secret.example.yaml").sort());
    expect(kustomization.images).toEqual([{ name: "svc", newTag: version }]);
  });

  test("every object validates against the Kubernetes API's schemas", () => {
    expect(objects.size).toBe(files.length);
    for (const [where, obj] of objects) {
      const Model = MODELS[`${obj.apiVersion}/${obj.kind}`];
      expect([where, Model !== undefined]).toEqual([where, true]);
      expect(() => new (Model as new (d: Obj) => { validate(): void })(obj).validate()).not.toThrow();
    }
  });

  type Container = {
    command: string[];
    image: string;
    ports?: { name: string; containerPort: number }[];
    env: { name: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }[];
    envFrom: { configMapRef: { name: string } }[];
    readinessProbe?: { httpGet: { path: string; port: string } };
    livenessProbe?: { httpGet: { path: string; port: string } };
    securityContext: Record<string, unknown>;
    volumeMounts: { name: string; mountPath: string }[];
  };
  type PodSpec = { metadata: { labels: Record<string, string> }; spec: Record<string, unknown> & { containers: Container[]; volumes: { name: string }[] } };
  const podOf = (kind: string) => (one(kind).spec as { template: PodSpec }).template;
  const config = one("ConfigMap").data as Record<string, string>;

  test("the Deployment: svc start, readiness on /readyz and liveness on /healthz, the master key from the Secret", () => {
    const pod = podOf("Deployment");
    const [c] = pod.spec.containers;
    expect(c?.command).toEqual(words(RELEASE_COMMANDS.start));
    expect(c?.image).toBe(kustomization.images[0]?.name);
    expect(c?.readinessProbe?.httpGet).toEqual({ path: "/readyz", port: "probes" });
    expect(c?.livenessProbe?.httpGet).toEqual({ path: "/healthz", port: "probes" });
    expect(c?.ports).toEqual([
      { name: "http", containerPort: Number(config.SVC_PORT), protocol: "TCP" },
      { name: "probes", containerPort: Number(config.SVC_PROBE_PORT), protocol: "TCP" },
    ]);
    expect(config.SVC_HOST).toBe("0.0.0.0");
    const secretRef = (name: string) => c?.env.find((e) => e.name === name)?.valueFrom?.secretKeyRef;
    expect(secretRef("SVC_MASTER_KEY")).toEqual({ name: "svc", key: "SVC_MASTER_KEY" });
    expect(secretRef("SVC_DATABASE_URL")).toEqual({ name: "svc", key: "SVC_DATABASE_URL" });
    // The example Secret has the keys the pods read.
    expect(Object.keys(one("Secret").stringData as Record<string, string>).sort()).toEqual(["SVC_DATABASE_URL", "SVC_MASTER_KEY"]);
    expect(c?.envFrom).toEqual([{ configMapRef: { name: one("ConfigMap").metadata.name } }]);
    expectKnownVariables([...Object.keys(config), ...(c?.env ?? []).map((e) => e.name)]);
    // The grace period covers the pause before SIGTERM and svc's own shutdown grace.
    const grace = pod.spec.terminationGracePeriodSeconds as number;
    expect(grace * 1000).toBeGreaterThan(Number(config.SVC_SHUTDOWN_GRACE_MS) + 5_000);
  });

  test("the migration Job runs svc migrate without the master key", () => {
    const pod = podOf("Job");
    const [c] = pod.spec.containers;
    expect(c?.command).toEqual(words(RELEASE_COMMANDS.migrate));
    expect(pod.spec.restartPolicy).toBe("Never");
    expect(c?.env.map((e) => e.name)).toEqual(["SVC_DATABASE_URL"]);
  });

  test("pods run as a non-root user on a read-only root filesystem, with /tmp and the data directory writable", () => {
    for (const kind of ["Deployment", "Job"]) {
      const pod = podOf(kind);
      expect(pod.spec.automountServiceAccountToken).toBe(false);
      expect(pod.spec.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } });
      expect((pod.spec.securityContext as { runAsUser: number }).runAsUser).toBeGreaterThan(0);
      for (const c of pod.spec.containers) {
        expect(c.securityContext).toEqual({
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          privileged: false,
          capabilities: { drop: ["ALL"] },
        });
        const mounts = c.volumeMounts.map((m) => m.mountPath).sort();
        expect(mounts).toEqual(["/tmp", config.SVC_DATA_DIR].sort());
        for (const m of c.volumeMounts) expect(pod.spec.volumes.map((v) => v.name)).toContain(m.name);
      }
    }
  });

  test("the Service, the autoscaler and the disruption budget select the Deployment's pods", () => {
    const deployment = one("Deployment");
    const labels = podOf("Deployment").metadata.labels;
    const selects = (selector: Record<string, string>) => Object.entries(selector).every(([k, v]) => labels[k] === v);
    expect((deployment.spec as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels).toEqual(labels);
    const service = one("Service").spec as { selector: Record<string, string>; ports: { targetPort: string }[] };
    expect(selects(service.selector)).toBe(true);
    expect(service.ports[0]?.targetPort).toBe("http");
    // The migration Job's pod is not one of them.
    expect(Object.entries(service.selector).every(([k, v]) => podOf("Job").metadata.labels[k] === v)).toBe(false);
    const hpa = one("HorizontalPodAutoscaler").spec as { scaleTargetRef: { kind: string; name: string }; minReplicas: number };
    expect(hpa.scaleTargetRef).toMatchObject({ kind: "Deployment", name: deployment.metadata.name });
    expect(hpa.minReplicas).toBeGreaterThanOrEqual(2);
    const pdb = one("PodDisruptionBudget").spec as { selector: { matchLabels: Record<string, string> }; minAvailable: number };
    expect(selects(pdb.selector.matchLabels)).toBe(true);
    expect(pdb.minAvailable).toBeLessThan(hpa.minReplicas);
  });
});

describe("deploy/systemd", () => {
  const unitText = read("systemd", "svc.service");
  const unit = parseUnit(unitText);
  const service = unit.Service ?? {};

  test("svc.service is hardened: its own user, a read-only system, a state directory, no new privileges", () => {
    const one = (k: string) => service[k]?.at(-1);
    expect(service.ExecStart).toEqual(["/opt/svc/bin/svc start"]);
    expect(one("DynamicUser")).toBe("yes");
    expect(one("ProtectSystem")).toBe("strict");
    expect(one("StateDirectory")).toBe("svc");
    expect(one("NoNewPrivileges")).toBe("yes");
    expect(one("PrivateTmp")).toBe("yes");
    expect(one("CapabilityBoundingSet")).toBe("");
    expect(service.Environment).toContain("SVC_DATA_DIR=%S/svc");
    expect(unit.Install?.WantedBy).toEqual(["multi-user.target"]);
    expectKnownVariables(Object.keys(parseEnvironmentFile(read("systemd", "svc.env.example"))));
  });

  const analyze = existsSync("/usr/bin/systemd-analyze") ? test : test.skip;
  analyze("systemd-analyze verifies the unit and rates its exposure as OK", async () => {
    // The unit as installed, with ExecStart and EnvironmentFile pointing at this checkout's files.
    const work = await mkdtemp(path.join(tmpdir(), "svc-unit-"));
    try {
      const file = path.join(work, "svc.service");
      await writeFile(
        file,
        unitText
          .replace("ExecStart=/opt/svc/bin/svc", `ExecStart=${path.join(ROOT, "bin", "svc.js")}`)
          .replace("EnvironmentFile=/etc/svc/svc.env", `EnvironmentFile=${path.join(DEPLOY, "systemd", "svc.env.example")}`),
      );
      const run = promisify(execFile);
      const verify = await run("systemd-analyze", ["verify", file]);
      // Unknown or misspelt directives are warnings on stderr with exit status 0: none is allowed.
      expect(`${verify.stdout}${verify.stderr}`.trim()).toBe("");
      const security = await run("systemd-analyze", ["security", "--offline=yes", "--no-pager", file]).catch((err: { stdout: string }) => err);
      const level = Number(/Overall exposure level for svc\.service: ([\d.]+)/.exec(security.stdout)?.[1]);
      expect(level).toBeLessThanOrEqual(2);
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  });
});
