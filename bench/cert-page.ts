import { selfSignedPem } from './certs.js'
import { type Controller, seedSigners, startController } from './controller.js'

const CERT_SIGNERS = 10
const M = '/edge/management/v1'

interface Page {
  data: { certPem: string | null; kid: string | null }[]
  meta: { pagination: { totalCount: number } }
}

/**
 * A controller (as `npm start` runs it) whose management signer list's default page holds exactly
 * 10 certificate signers, each with a real self-signed certificate and a kid: they are created
 * first, and the default sort is by id, which follows creation; then 90 JWKS signers follow, so
 * that the store holds 100 signers as the JWKS page's controller does. The page is checked.
 */
export async function startCertController(db: string): Promise<Controller> {
  const ctrl = await startController(db)
  for (let i = 0; i < CERT_SIGNERS; i++) {
    const res = await ctrl.call('POST', `${M}/external-jwt-signers`, {
      name: `cert-signer-${i}`,
      enabled: true,
      issuer: `https://cert-idp-${i}.example`,
      audience: 'ziti',
      certPem: await selfSignedPem(`bench cert signer ${i}`, i + 1),
      kid: `cert-kid-${i}`,
      externalAuthUrl: `https://cert-idp-${i}.example/auth`,
    })
    if (res.status !== 201) throw new Error(`bench: cert-signer-${i} was refused (${res.status})`)
  }
  // Ids begin with the creation time in ms: one ms apart, every later signer sorts after.
  await new Promise((r) => setTimeout(r, 5))
  await seedSigners(ctrl.call, 100 - CERT_SIGNERS, CERT_SIGNERS)
  const page = (await (await ctrl.call('GET', `${M}/external-jwt-signers`)).json()) as Page
  const certs = page.data.filter((s) => s.certPem?.includes('BEGIN CERTIFICATE') && s.kid)
  if (page.data.length !== CERT_SIGNERS || certs.length !== CERT_SIGNERS) {
    throw new Error(
      `bench: the default page holds ${certs.length} certificate signers of ${page.data.length}`,
    )
  }
  if (page.meta.pagination.totalCount !== 100) {
    throw new Error(`bench: ${page.meta.pagination.totalCount} signers instead of 100`)
  }
  return ctrl
}
