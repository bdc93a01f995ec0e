import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DEPLOY_DIR, readDeployFile, which } from "./helpers/deploy.js";

/**
 * The high-availability files of deploy/ (issue 38), checked by the real tools where they are
 * installed: Alertmanager's configuration by `amtool check-config` (Debian
 * prometheus-alertmanager), HAProxy's in front of Patroni by `haproxy -c` (Debian haproxy); and
 * the Patroni settings docs/operations.md states (ttl 20, loop_wait 5, retry_timeout 5,
 * synchronous_mode_strict, health checks every second on Patroni's REST API). Each tool's part is
 * skipped with a message saying how to run it when the tool is missing.
 */

const amtool = which("amtool");
const haproxy = which("haproxy");
if (!amtool) console.warn("deploy-ha: amtool part skipped: apt-get install -y prometheus-alertmanager");
if (!haproxy) console.warn("deploy-ha: haproxy part skipped: apt-get install -y haproxy");

describe("deploy/ high availability", () => {
  it.skipIf(!amtool)("`amtool check-config deploy/alertmanager.yml` accepts it, with a route for critical alerts", () => {
    const result = spawnSync(amtool!, ["check-config", join(DEPLOY_DIR, "alertmanager.yml")], { encoding: "utf8" });
    expect(result.status, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toContain("SUCCESS");
    expect(readDeployFile("alertmanager.yml")).toContain(`severity="critical"`);
  });

  it.skipIf(!haproxy)(
    "`haproxy -c` accepts deploy/patroni/haproxy.cfg: writes by GET /primary, reads by GET /replica?lag=, checked every second",
    () => {
      const result = spawnSync(haproxy!, ["-c", "-f", join(DEPLOY_DIR, "patroni", "haproxy.cfg")], { encoding: "utf8" });
      expect(result.status, result.stdout + result.stderr).toBe(0);
      const config = readDeployFile("patroni/haproxy.cfg");
      expect(config).toContain("option httpchk GET /primary");
      expect(config).toMatch(/option httpchk GET \/replica\?lag=\S+/);
      expect(config.match(/default-server inter 1s .*on-marked-down shutdown-sessions/g)).toHaveLength(2);
    },
  );

  it("deploy/patroni/patroni.yml has the settings the failover figures assume", () => {
    const config = readDeployFile("patroni/patroni.yml");
    for (const setting of ["ttl: 20", "loop_wait: 5", "retry_timeout: 5", "synchronous_mode: true", "synchronous_mode_strict: true"]) {
      expect(config).toContain(`    ${setting}\n`);
    }
    for (const node of [1, 2, 3]) expect(readDeployFile(`patroni/node${node}.env.example`)).toContain(`PATRONI_NAME=node${node}`);
  });
});
