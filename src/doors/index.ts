// The doors' surface for the service: how each way in starts (HTTP ingest, MQTT, Sparkplug B, LwM2M, the
// admission API, leases, Envoy RLS), the parts they share (startDoorParts), and the OpenAPI route.
export * from './pipeline/startDoorParts.ts';
export * from './http/startIngest.ts';
// The device doors are loaded when the service is configured to start them: their broker and codec libraries
// (mqtt, sparkplug-payload, coap) would otherwise cost every start and every CLI call.
export const loadMqttDoor = () => import('./mqtt/startMqttDoor.ts');
export const loadSparkplugDoor = () => import('./sparkplug/startSparkplugDoor.ts');
export const loadLwm2mDoor = () => import('./lwm2m/startLwm2mDoor.ts');
export * from './admissions/admissionRoutes.ts';
export * from './admissions/serviceCallers.ts';
export * from './leases/leaseRoutes.ts';
export * from './openapi/openapiRoute.ts';
export * from './envoy-rls/descriptorMapping.ts';
export * from './envoy-rls/rateLimitService.ts';
