import fp from 'fastify-plugin'

/** JSON bodies, where an empty body reads as "no body": login accepts a bare POST with a bearer token. */
export const jsonBody = fp(
  async (app) => {
    const jsonParser = app.getDefaultJsonParser('error', 'error')
    app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
      if (body === '') return done(null, undefined)
      return jsonParser(request, body as string, done) // parseAs: 'string'
    })
  },
  { name: 'json-body' },
)
