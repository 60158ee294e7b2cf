import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'

const root = resolve(import.meta.dirname, '..')
const src = join(root, 'src')

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return sourceFiles(path)
    return name.endsWith('.ts') ? [path] : []
  })
}

/** Every import of a source file: relative ones as paths under src/, packages by name. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8')
  const specs = [...text.matchAll(/(?:from|import)\s*\(?\s*'([^']+)'/g)].map((m) => m[1] ?? '')
  return specs.map((s) =>
    s.startsWith('.') ? relative(src, resolve(dirname(file), s)).replace(/\.js$/, '.ts') : s,
  )
}

const DOMAIN = [
  'audit/',
  'backups/',
  'controllers/',
  'enrollment/',
  'identities/',
  'jwt/',
  'policies/',
  'signers/',
]
const HTTP = ['routes/', 'plugins/']

/** [folder, what it may not import (a path under src/ or a package name), why]. */
const RULES: [string, string[], string][] = [
  ['routes/', ['store/'], 'routes reach the store only through the domain services'],
  ['plugins/', ['store/'], 'plugins reach the store only through the domain services'],
  ['store/', [...DOMAIN, ...HTTP, 'metrics', 'app.ts', 'services.ts'], 'the store knows no domain'],
  [
    'audit/|backups/|controllers/|enrollment/|identities/|jwt/|policies/|signers/',
    [...HTTP, 'fastify', 'fastify-plugin', '@fastify/'],
    'domain code is plain TypeScript',
  ],
  ['store/sqlite/', ['store/postgres/', 'pg'], 'each store stands alone'],
  ['store/postgres/', ['store/sqlite/', 'better-sqlite3'], 'each store stands alone'],
  ['store/query/', ['store/sqlite/', 'store/postgres/', 'better-sqlite3', 'pg'], 'shared by both'],
]

describe('the code map', () => {
  const files = sourceFiles(src).map((f) => ({ path: relative(src, f), imports: importsOf(f) }))

  for (const [folders, forbidden, why] of RULES) {
    it(`keeps ${folders} from importing ${forbidden.join(', ')} (${why})`, () => {
      const inFolder = files.filter((f) => folders.split('|').some((d) => f.path.startsWith(d)))
      expect(inFolder.length).toBeGreaterThan(0)
      const offending = inFolder.flatMap((f) =>
        f.imports
          .filter((i) =>
            forbidden.some(
              (x) =>
                i === x || i.startsWith(x.endsWith('/') ? x : `${x}/`) || i.startsWith(`${x}.`),
            ),
          )
          .map((i) => `${f.path} imports ${i}`),
      )
      expect(offending).toEqual([])
    })
  }

  it('lists in the README every folder of src/, and only those', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8')
    const section = readme.split('## Code map')[1]?.split('\n## ')[0] ?? ''
    const listed = [...section.matchAll(/^\| `src\/([\w/-]*)` \|/gm)].map((m) => m[1] ?? '')
    const folders = (dir: string): string[] =>
      readdirSync(join(src, dir))
        .filter((n) => statSync(join(src, dir, n)).isDirectory())
        .flatMap((n) => [`${dir}${n}/`, ...folders(`${dir}${n}/`)])
    // Folders of a route or a section are covered by their parent's row.
    const expected = ['', ...folders('')].filter((f) => !/^routes\/.+|^router-config\/.+/.test(f))
    expect(listed.sort()).toEqual(expected.sort())
  })

  it('leaves in the root of src/store/ only what both stores share', () => {
    const rootFiles = files.filter((f) => /^store\/[^/]+$/.test(f.path))
    for (const f of rootFiles) {
      expect(
        f.imports.filter((i) => /^(better-sqlite3|pg)$/.test(i)),
        f.path,
      ).toEqual([])
    }
  })
})
