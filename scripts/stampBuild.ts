// The build's last step: records the digest of what dist/ was made from (scripts/buildInputs.ts).
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { BUILD_STAMP, buildInputsDigest } from './buildInputs.ts';

const root = path.resolve(import.meta.dirname, '..');
const digest = buildInputsDigest(root);
writeFileSync(path.join(root, BUILD_STAMP), `${digest}\n`);
console.log(`wrote ${BUILD_STAMP} (${digest.slice(0, 12)})`);
