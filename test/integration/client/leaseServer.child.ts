// A service process for the leasing client tests: the lease door over a Governor on a table of limits, its
// summaries collected by a Recorder whose totals the parent asks for over IPC. The parent may kill it.
import { pino } from 'pino';
import { createLeaseRoutes } from '../../../src/doors/leases/leaseRoutes.ts';
import { Governor } from '../../../src/governance/index.ts';
import type { AdmissionSummary, LimitSource, TenantGovernanceRecord } from '../../../src/governance/index.ts';
import { createServer, listen } from '../../../src/http-server/server.ts';

const LIMIT = Number(process.env.LEASE_TEST_LIMIT ?? '300');
const records = new Map<string, TenantGovernanceRecord>([
  ['fleet', { tenantId: 'fleet', tierId: null, levels: { API_REQUESTS: { override: { ratePerSecond: LIMIT } } } }],
]);
const limitSource: LimitSource = {
  loadTenants: async (ids) => new Map(ids.flatMap((id) => (records.has(id) ? [[id, records.get(id)!] as const] : []))),
  loadPlatformDefaults: async () => ({}),
};
const totals = { admitted: 0, refused: 0, summaries: 0 };
const recorder = {
  async record(admissions: readonly AdmissionSummary[]) {
    for (const each of admissions) {
      totals.summaries++;
      totals.admitted += each.admittedUnits;
      totals.refused += each.rejectedUnits + each.shedUnits;
    }
  },
};
const logger = pino({ level: 'silent' });
const leaseGovernor = new Governor({ limitSource });
const routes = createLeaseRoutes({ leaseGovernor, recorder, authorize: async (header) => (header === 'Bearer test-token' ? 'ok' : 'unauthenticated'), logger });
// The tenant's limits read before the first lease: until then the Governor meters a tenant at the platform
// default (none here), which a test of the tenant's own limit must not measure.
leaseGovernor.admit({ tenant: 'fleet', dimension: 'API_REQUESTS', units: 0, at: Date.now() });
await leaseGovernor.loadsSettled();
const address = await listen(createServer({ logger, readiness: [] }, routes), 0, '127.0.0.1');
process.on('message', () => process.send!({ totals }));
process.send!({ port: address.port });
process.on('disconnect', () => process.exit(0));
