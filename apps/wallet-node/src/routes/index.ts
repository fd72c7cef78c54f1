import type { ServiceApp } from '@rgbx/service-kit';
import { registerBackupRoutes } from './backup.ts';
import { registerBeginRoutes } from './begins.ts';
import { registerBtcRoutes } from './btc.ts';
import { registerIssueRoutes } from './issue.ts';
import { registerKeyRoutes } from './keys.ts';
import type { RouteDeps } from './kit.ts';
import { registerWalletRoutes } from './wallet.ts';

export type { RouteDeps } from './kit.ts';

/** Every route of the wallet node, grouped by concern. */
export function registerRoutes(app: ServiceApp, deps: RouteDeps): void {
  registerWalletRoutes(app, deps);
  registerBtcRoutes(app, deps);
  registerIssueRoutes(app, deps);
  registerBackupRoutes(app, deps);
  registerBeginRoutes(app, deps);
  registerKeyRoutes(app, deps);
}
