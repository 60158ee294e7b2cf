import { describe, expect, it, onTestFinished } from 'vitest'
import type { Store } from '../../src/store/contract.js'
import { buildTestApp, caller, login } from '../helpers/app.js'
import { certSignerAndToken } from '../helpers/signers.js'
import { openTestStore, STORES } from '../helpers/stores.js'
import { within } from '../helpers/within.js'

// A login checks its credentials, then waits for its group commit. An identity disabled, or given a
// new password, in that window ended the sessions stored by then and missed the login's: it worked
// on, and a disabled identity's came back with a re-enable. These hold the login between its check
// and its commit (the store's recordLogins waits on a gate) while an admin makes the change.

const AUTH = '/edge/client/v1/authenticate?method=password'
const IDENTITIES = '/edge/management/v1/identities'
const PASSWORD = 'victim-password-1'

/** The store, with login batches held while `gate.held` until `gate.open()`. */
function gated(real: Store) {
  let release: () => void = () => {}
  let opened = Promise.resolve()
  const gate = {
    held: false,
    waiting: 0,
    close() {
      opened = new Promise((resolve) => {
        release = resolve
      })
      this.held = true
    },
    open() {
      this.held = false
      release()
    },
  }
  const store = new Proxy(real, {
    get(target, property) {
      if (property !== 'recordLogins') return Reflect.get(target, property, target)
      return async (...args: Parameters<Store['recordLogins']>) => {
        if (gate.held) {
          gate.waiting++
          await opened
        }
        return target.recordLogins(...args)
      }
    },
  })
  return { store, gate }
}

describe.each(STORES)('a login held between its check and its commit, on %s', (storeKind) => {
  async function setup() {
    const real = await openTestStore(storeKind)
    onTestFinished(() => real.close())
    const { store, gate } = gated(real)
    const app = await buildTestApp({ storeKind, store })
    const call = caller(app, await login(app))
    const id = (await call('POST', IDENTITIES, { name: 'victim' })).json().data.id as string
    expect(
      (await call('PUT', `${IDENTITIES}/${id}/password`, { password: PASSWORD })).statusCode,
    ).toBe(200)
    /** Starts a login of the victim and resolves, once it waits at the gate, with its answer to come. */
    const heldLogin = async (password = PASSWORD) => {
      gate.close()
      const before = gate.waiting
      const answer = app.inject({
        method: 'POST',
        url: AUTH,
        payload: { username: 'victim', password },
      })
      await within(5000, async () => expect(gate.waiting).toBe(before + 1))
      return { answer } // not the promise itself: an async function would wait for it
    }
    const hasSession = async () =>
      (await call('GET', `${IDENTITIES}/${id}`)).json().data.hasApiSession as boolean
    return { app, call, id, gate, heldLogin, hasSession }
  }

  it('is refused when the password changed meanwhile; the new password logs in', async () => {
    const { call, id, gate, heldLogin, hasSession } = await setup()
    const { answer } = await heldLogin()
    const changed = await call('PUT', `${IDENTITIES}/${id}/password`, {
      password: 'a-new-password-2',
    })
    expect(changed.statusCode).toBe(200)
    gate.open()
    const res = await answer
    expect(res.statusCode).toBe(401)
    expect(res.json().error.code).toBe('INVALID_AUTH')
    expect(res.headers['zt-session']).toBeUndefined()
    expect(await hasSession()).toBe(false)
    // A failed login of the audit trail, as any other (written after the answer).
    const filter = encodeURIComponent('action = "login-failed"')
    await within(5000, async () => {
      const events = (await call('GET', `/edge/management/v1/audit-events?filter=${filter}`)).json()
        .data
      expect(events).toMatchObject([
        {
          actor: { id, name: 'victim' },
          changedFields: ['changed'],
          requestId: res.json().error.requestId,
        },
      ])
    })
    const { answer: again } = await heldLogin('a-new-password-2')
    gate.open()
    expect((await again).statusCode).toBe(200)
  })

  it('is refused when the identity was disabled meanwhile, and stays refused after a re-enable', async () => {
    const { call, id, gate, heldLogin, hasSession } = await setup()
    const { answer } = await heldLogin()
    expect((await call('PATCH', `${IDENTITIES}/${id}`, { disabled: true })).statusCode).toBe(200)
    gate.open()
    const res = await answer
    expect(res.statusCode).toBe(401)
    expect(res.json().error.code).toBe('INVALID_AUTH')
    // Nothing was stored that a re-enable would bring back.
    expect((await call('PATCH', `${IDENTITIES}/${id}`, { disabled: false })).statusCode).toBe(200)
    expect(await hasSession()).toBe(false)
  })

  it('is refused when the identity was deleted meanwhile (401, not an error of the store)', async () => {
    const { call, id, gate, heldLogin } = await setup()
    const { answer } = await heldLogin()
    expect((await call('DELETE', `${IDENTITIES}/${id}`)).statusCode).toBe(200)
    gate.open()
    const res = await answer
    expect(res.statusCode).toBe(401)
    expect(res.json().error.code).toBe('INVALID_AUTH')
  })

  it('a JWT login is refused when the identity was disabled meanwhile: 401 with the challenge', async () => {
    const { app, call, gate } = await setup()
    const { identityId, jwt } = await certSignerAndToken(call, 'https://idp.races.example', 'jo')
    gate.close()
    const before = gate.waiting
    const answer = app.inject({
      method: 'POST',
      url: '/edge/client/v1/authenticate?method=ext-jwt',
      headers: { authorization: `Bearer ${jwt}` },
    })
    await within(5000, async () => expect(gate.waiting).toBe(before + 1))
    expect(
      (await call('PATCH', `${IDENTITIES}/${identityId}`, { disabled: true })).statusCode,
    ).toBe(200)
    gate.open()
    const res = await answer
    expect(res.statusCode).toBe(401)
    // As any other refused JWT login (issue 4), not a password login's INVALID_AUTH.
    expect(res.json().error.code).toBe('UNAUTHORIZED')
    expect(res.headers['www-authenticate']).toContain('realm="openziti-primary-ext-jwt"')
    expect(res.headers['www-authenticate']).toContain('error="invalid"')
    expect(res.headers['zt-session']).toBeUndefined()
    const jo = (await call('GET', `${IDENTITIES}/${identityId}`)).json().data
    expect(jo.hasApiSession).toBe(false)
  })

  it('is stored when anything else of the identity changed meanwhile', async () => {
    const { app, call, id, gate, heldLogin, hasSession } = await setup()
    const { answer } = await heldLogin()
    const renamed = await call('PATCH', `${IDENTITIES}/${id}`, { tags: { team: 'blue' } })
    expect(renamed.statusCode).toBe(200)
    gate.open()
    const res = await answer
    expect(res.statusCode).toBe(200)
    expect(await hasSession()).toBe(true)
    const token = res.headers['zt-session'] as string
    const own = await app.inject({
      method: 'GET',
      url: '/edge/client/v1/current-identity',
      headers: { 'zt-session': token },
    })
    expect(own.json().data).toMatchObject({ id, tags: { team: 'blue' } })
  })
})
