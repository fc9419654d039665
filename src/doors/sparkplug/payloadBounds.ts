// A pre-scan of a Sparkplug B payload's protobuf wire format, before anything decodes it: the nesting of its
// messages, the nesting of its templates and the number of its metrics, each against a bound. It reads the
// bytes once, with a stack of its own (no recursion), so its time is linear in the payload's size whatever the
// payload holds; a payload over a bound is refused before the decoder (whose time, and whose stack, follow the
// nesting) sees it. Only the structure is read: tags, lengths and the fields that are messages
// (sparkplug_b.proto of Eclipse Tahu, as generated into sparkplug-payload); every other field is skipped.

/** Templates inside templates: a metric whose value is a template holding a template metric is depth 2. */
export const MAX_TEMPLATE_DEPTH = 16;
/** Messages inside messages, of any kind (templates, property sets, data sets), the payload itself being 1. */
export const MAX_MESSAGE_DEPTH = 64;
/** Metrics in one payload, counting those inside templates. */
export const MAX_METRICS = 10_000;
/**
 * Messages of any kind in one payload (metrics, data set rows and values, properties, ...): what decoding costs
 * follows their number, and 1 MiB of empty data set values is 500,000 of them (270 ms to decode); 100,000 take
 * some 50 ms.
 */
export const MAX_MESSAGES = 100_000;

export type PayloadBounds =
  | { status: 'within'; metricCount: number; templateDepth: number; messageDepth: number }
  | { status: 'over'; message: string }
  | { status: 'malformed'; message: string };

/** The message types of sparkplug_b.proto whose fields the scan follows. */
type MessageType =
  | 'Payload'
  | 'Metric'
  | 'Template'
  | 'Parameter'
  | 'DataSet'
  | 'Row'
  | 'DataSetValue'
  | 'PropertyValue'
  | 'PropertySet'
  | 'PropertySetList'
  | 'MetaData'
  | 'Extension';

/** For each message type, its fields (by number) that are messages, and their type. */
const MESSAGE_FIELDS: Record<MessageType, Readonly<Record<number, MessageType>>> = {
  Payload: { 2: 'Metric' },
  Metric: { 8: 'MetaData', 9: 'PropertySet', 17: 'DataSet', 18: 'Template', 19: 'Extension' },
  Template: { 2: 'Metric', 3: 'Parameter' },
  Parameter: { 9: 'Extension' },
  DataSet: { 4: 'Row' },
  Row: { 1: 'DataSetValue' },
  DataSetValue: { 7: 'Extension' },
  PropertyValue: { 9: 'PropertySet', 10: 'PropertySetList', 11: 'Extension' },
  PropertySet: { 2: 'PropertyValue' },
  PropertySetList: { 1: 'PropertySet' },
  MetaData: {},
  // The *ValueExtension messages declare no fields: what they carry is skipped, but still scanned, because
  // the decoder reads their tags too.
  Extension: {},
};

interface Frame {
  type: MessageType;
  end: number;
  templateDepth: number;
}

const WIRE_VARINT = 0;
const WIRE_FIXED64 = 1;
const WIRE_LENGTH_DELIMITED = 2;
const WIRE_FIXED32 = 5;

/**
 * Scans `payload` as a Sparkplug B Payload. `over` names the bound it passes; `malformed` says the bytes are not
 * protobuf the decoder could read (a length past the end, a group, a bad wire type), so the decoder never runs.
 */
export function scanSparkplugPayload(payload: Uint8Array): PayloadBounds {
  const stack: Frame[] = [{ type: 'Payload', end: payload.length, templateDepth: 0 }];
  let position = 0;
  let metricCount = 0;
  let messageCount = 1;
  let deepestTemplate = 0;
  let deepestMessage = 1;

  // Reads a varint at `position` (at most 10 bytes); -1 when it runs past the end or is too long. Values past
  // 2^53 lose precision, which does not matter: only tags and lengths are used, and those must be small.
  const readVarint = (end: number): number => {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 10; i++) {
      if (position >= end) return -1;
      const byte = payload[position++]!;
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) return value;
      scale *= 128;
    }
    return -1;
  };

  while (stack.length > 0) {
    const frame = stack[stack.length - 1]!;
    if (position === frame.end) {
      stack.pop();
      continue;
    }
    if (position > frame.end) return { status: 'malformed', message: 'a nested message runs past its length' };
    const tag = readVarint(frame.end);
    if (tag < 0) return { status: 'malformed', message: 'a field tag runs past the end' };
    const field = Math.floor(tag / 8);
    const wireType = tag % 8;
    if (field === 0) return { status: 'malformed', message: 'field number 0' };
    const childType = MESSAGE_FIELDS[frame.type][field];
    if (childType !== undefined && wireType !== WIRE_LENGTH_DELIMITED) {
      return { status: 'malformed', message: `field ${field} of ${frame.type} must be a message` };
    }
    switch (wireType) {
      case WIRE_VARINT:
        if (readVarint(frame.end) < 0) return { status: 'malformed', message: 'a varint runs past the end' };
        break;
      case WIRE_FIXED64:
        position += 8;
        break;
      case WIRE_FIXED32:
        position += 4;
        break;
      case WIRE_LENGTH_DELIMITED: {
        const length = readVarint(frame.end);
        if (length < 0 || position + length > frame.end) return { status: 'malformed', message: 'a length runs past the end' };
        if (childType === undefined) {
          position += length;
          break;
        }
        if (++messageCount > MAX_MESSAGES) return { status: 'over', message: `more than ${MAX_MESSAGES} messages` };
        if (childType === 'Metric' && ++metricCount > MAX_METRICS) {
          return { status: 'over', message: `more than ${MAX_METRICS} metrics` };
        }
        const templateDepth = frame.templateDepth + (childType === 'Template' ? 1 : 0);
        if (templateDepth > MAX_TEMPLATE_DEPTH) {
          return { status: 'over', message: `templates nested more than ${MAX_TEMPLATE_DEPTH} deep` };
        }
        if (stack.length + 1 > MAX_MESSAGE_DEPTH) {
          return { status: 'over', message: `messages nested more than ${MAX_MESSAGE_DEPTH} deep` };
        }
        stack.push({ type: childType, end: position + length, templateDepth });
        if (templateDepth > deepestTemplate) deepestTemplate = templateDepth;
        if (stack.length > deepestMessage) deepestMessage = stack.length;
        break;
      }
      default:
        // Groups (3, 4) and the unused wire types: sparkplug_b.proto has no groups, and the decoder would
        // follow nested groups with a recursion of its own.
        return { status: 'malformed', message: `wire type ${wireType}` };
    }
    if (position > frame.end) return { status: 'malformed', message: 'a field runs past its message' };
  }
  return { status: 'within', metricCount, templateDepth: deepestTemplate, messageDepth: deepestMessage };
}
