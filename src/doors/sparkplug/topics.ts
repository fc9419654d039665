// Sparkplug B topics: `spBv1.0/<group>/<type>/<edge node>[/<device>]`. Only NDATA (an edge node's own
// metrics) and DDATA (a device's behind it) carry telemetry the door charges; births, deaths, commands and
// state are never subscribed, so never charged. The tenant is the group ID, or what SPARKPLUG_GROUP_TENANTS
// maps it to.
import { ID_PATTERN } from '../../governance/index.ts';

export const SPARKPLUG_NAMESPACE = 'spBv1.0';

export type SparkplugTopic =
  | { status: 'parsed'; group: string; type: 'NDATA' | 'DDATA'; edgeNode: string; device: string | null }
  | { status: 'invalid'; message: string };

/** The shared subscriptions a replica takes (one for node data, one for device data). */
export function sparkplugSubscriptions(shareGroup: string): string[] {
  return [`$share/${shareGroup}/${SPARKPLUG_NAMESPACE}/+/NDATA/+`, `$share/${shareGroup}/${SPARKPLUG_NAMESPACE}/+/DDATA/+/+`];
}

export function parseSparkplugTopic(topic: string): SparkplugTopic {
  const levels = topic.split('/');
  const [namespace, group, type, edgeNode, device] = levels;
  if (namespace !== SPARKPLUG_NAMESPACE || group === undefined || edgeNode === undefined) {
    return { status: 'invalid', message: `the topic is not ${SPARKPLUG_NAMESPACE}/<group>/NDATA|DDATA/<edge node>[/<device>]` };
  }
  if (type === 'NDATA' && levels.length === 4) return checked(group, type, edgeNode, null);
  if (type === 'DDATA' && levels.length === 5) return checked(group, type, edgeNode, device!);
  return { status: 'invalid', message: 'only NDATA (4 levels) and DDATA (5 levels) carry charged telemetry' };
}

function checked(group: string, type: 'NDATA' | 'DDATA', edgeNode: string, device: string | null): SparkplugTopic {
  // Sparkplug IDs may not hold + / #; the door needs them to be IDs it can name (and a non-UTF-8 topic is not).
  if (group === '' || edgeNode === '' || device === '') return { status: 'invalid', message: 'a topic level is empty' };
  for (const id of [group, edgeNode, device ?? 'x']) {
    if (!ID_PATTERN.test(id)) return { status: 'invalid', message: 'a topic level is not a valid ID' };
  }
  return { status: 'parsed', group, type, edgeNode, device };
}

/** The tenant a group belongs to: the operator's map (SPARKPLUG_GROUP_TENANTS), else the group ID itself. */
export function tenantOfGroup(group: string, groupTenants: ReadonlyMap<string, string>): string | null {
  const tenant = groupTenants.get(group) ?? group;
  return ID_PATTERN.test(tenant) ? tenant : null;
}
