// Adapts rgb-lib's SWIG-generated binding (`@rgb-tools/rgb-lib-linux-x64@0.3.0-beta.7`, swig_wrap.cxx) to the
// V8 of Node 24 (13.6) before node-gyp compiles it. That V8 removed three APIs the generated code calls:
// - `FunctionCallbackInfo::Holder()`: for a plain function template (no signature) the holder is the
//   receiver, so `This()` is the same object;
// - `ObjectTemplate::SetAccessor` and `Object::SetAccessor`: `SetNativeDataProperty` takes the same
//   name/getter/setter callbacks (V8's documented replacement; it has existed since well before V8 11, so
//   the patched file still compiles for Node 20).
// Every replacement must match an exact number of times: a different binding version fails here, loudly,
// instead of compiling into something else.
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(join(process.cwd(), 'package.json'));
const pkgDir = dirname(require.resolve('@rgb-tools/rgb-lib-linux-x64/package.json'));
const { version } = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));
const file = join(pkgDir, 'swig_wrap.cxx');
let source = readFileSync(file, 'utf8');

const edits = [
  ['args.Holder()', 'args.This()', 5],
  ['proto_templ->SetAccessor(', 'proto_templ->SetNativeDataProperty(', 1],
  ['obj->SetAccessor(context,', 'obj->SetNativeDataProperty(context,', 1],
];
for (const [from, to, expected] of edits) {
  const found = source.split(from).length - 1;
  if (found !== expected) {
    console.error(
      `patch-rgb-lib-v8: expected ${expected} × ${JSON.stringify(from)} in ${file} (rgb-lib ${version}), found ${found}`,
    );
    process.exit(1);
  }
  source = source.replaceAll(from, to);
}
writeFileSync(file, source);
console.info(`patch-rgb-lib-v8: ${file} (rgb-lib ${version}) adapted to V8 13 (${edits.length} edits)`);
