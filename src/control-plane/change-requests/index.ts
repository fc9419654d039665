// Limit change requests: scheduled changes and two-person approval of limit changes. The runner
// (../controlPlane.ts) records and decides requests through runRequests.ts; reads lay due changes over the
// base read models (dueChanges.ts); each process applies a change at its instant by its own timer
// (scheduler.ts); the API and console list requests (requestRecords.ts).
export * from './dueChanges.ts';
export * from './requests.ts';
export * from './requestRecords.ts';
export * from './runRequests.ts';
export * from './scheduler.ts';
