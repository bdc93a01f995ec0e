import { useCallback, useMemo } from "preact/hooks";
import { PointsAdminClient, PointsApiError, type Parameters } from "../../client/index.js";
import { Header } from "./header.js";
import { FailContext } from "./context.js";
import { errorText } from "./lib/errors.js";
import { AdminForms } from "./screens/admin.js";
import { PayoutScreens } from "./screens/payouts.js";
import { LogCheckpoint } from "./log-checkpoint.js";

/** The admin console's screens: what the admin token opens without an operator session. */
export const ADMIN_SCREENS = [
  { path: "admin", title: "Operators & credits" },
  { path: "payouts", title: "Payouts" },
] as const;

/**
 * The console signed in with the admin token alone: operators, credits, registered contracts,
 * snapshots and balances.csv. A 403 means the service no longer takes this token (ADMIN_TOKEN
 * changed): the tab returns to sign-in.
 */
export function AdminShell(props: {
  adminToken: string;
  parameters: Parameters;
  route: string[];
  onSignOut(message: string | null): void;
}) {
  const { adminToken, parameters, route, onSignOut } = props;
  const admin = useMemo(() => new PointsAdminClient({ baseUrl: location.origin, adminToken, retry: { maxAttempts: 2 } }), [adminToken]);
  const fail = useCallback(
    (error: unknown) => {
      if (PointsApiError.is(error, "FORBIDDEN")) onSignOut("The service no longer accepts this admin token. Sign in again.");
      return errorText(error);
    },
    [onSignOut],
  );
  const screen = route[0] === "payouts" ? "payouts" : "admin";
  return (
    <FailContext.Provider value={fail}>
      <Header
        screens={ADMIN_SCREENS}
        route={screen}
        subtitle="Admin console (no operator session)"
        subtitleIsContract={false}
        onSignOut={() => onSignOut("Signed out.")}
      />
      <main id="main" tabIndex={-1}>
        {screen === "payouts" ? (
          <PayoutScreens reader={admin} admin={admin} operator={null} pointTypes={parameters.POINT_TYPES} />
        ) : (
          <section aria-labelledby="admin-title">
            <h1 id="admin-title">Operators &amp; credits</h1>
            <AdminForms admin={admin} parameters={parameters} defaultContract="" />
            <LogCheckpoint log={admin.log} version={0} />
          </section>
        )}
      </main>
    </FailContext.Provider>
  );
}
