// The Fastify application: the contract's two routes on Fastify's router,
// with every option the stack sets and why (also in server.toml [[tuning]]
// and the README's "Tuning choices"). server.js runs it in each worker
// process; the tests run it in-process over real HTTP (test/app.test.js).

import { METHODS } from 'node:http'

import Fastify from 'fastify'

import { ALLOW, CONTENT_TYPE } from './lib/contract.js'
import { contractRoutes } from './lib/routes.js'

/** Sent verbatim in the hello body; must equal display_name in server.toml (a test checks it). */
export const DISPLAY_NAME = 'Node.js Fastify'

/** The routes of the contract; any other method on them is a 405 with ALLOW. */
const ROUTES = ['/', '/workday']

/** Fastify's factory options (Fastify copies them; app.initialConfig shows what is in effect). */
export const FASTIFY_OPTIONS = Object.freeze({
  // No logger (Fastify's default, stated): the contract forbids per-request
  // logs, and with a logger Fastify writes two lines per request.
  logger: false,
  // Idle keep-alive connections are closed after 72 s: Fastify's default,
  // set here explicitly; longer than the 60 s idle timeout of common load
  // balancers, so a proxy never reuses a connection the server just closed.
  keepAliveTimeout: 72_000,
  // Fastify's docs: without a reverse proxy in front, requestTimeout "must be
  // set to a non-zero value" against slow-request denial of service (Fastify
  // leaves it at 0). A whole request (headers; these routes take no body) must
  // arrive within 10 s, as gin's ReadTimeout. Node checks it every 30 s
  // (connectionsCheckingInterval), so a slow client is cut after 10..40 s.
  requestTimeout: 10_000,
  // A connection with a request in progress but no byte moving either way for
  // 30 s is closed (server.timeout; Fastify's default 0 never closes it): a
  // client that stops reading a 100 KB body cannot pin a socket for ever.
  connectionTimeout: 30_000,
  // On close() (SIGTERM), idle keep-alive connections are closed at once and
  // busy ones after their response (Fastify's default, stated): a graceful
  // stop does not wait for keepAliveTimeout.
  forceCloseConnections: 'idle',
  // Every GET route gets a HEAD sibling that runs the GET handler and sends
  // its headers, with the Content-Length of the GET body, and no body
  // (Fastify's default, stated: the contract needs HEAD on both routes).
  exposeHeadRoutes: true,
  routerOptions: {
    // find-my-way turns each method's routing tree into generated JavaScript
    // once at start-up instead of walking the tree per request (Fastify's
    // docs: faster lookups, the same matching semantics).
    compile: true,
    // Fastify's defaults, stated because the contract depends on them:
    // '/workday/' and '/Workday' are other paths (404), and so is '//'.
    ignoreTrailingSlash: false,
    ignoreDuplicateSlashes: false,
    caseSensitive: true
  }
})

// Exact Content-Type on every 200 and 400. Fastify sets Content-Length from
// the string or Buffer itself (never chunked) and Node's http adds Date.
function send (reply, status, body) {
  reply.code(status).header('content-type', CONTENT_TYPE).send(body)
}

/**
 * The Fastify instance of the contract for one display name over one
 * calendar. Not yet listening: the caller listens (server.js, the tests).
 */
export function buildApp ({ calendar, displayName = DISPLAY_NAME, options = FASTIFY_OPTIONS }) {
  const app = Fastify(options)

  // No route reads a body. All of Fastify's body parsers (JSON, text) are
  // removed and one catch-all parser leaves any body unread (Node discards
  // it after the answer), so a POST to an unknown path gets its 404 without
  // a JSON parse error, a 415, or any parsing work.
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', (request, payload, done) => done(null))

  const routes = contractRoutes({ calendar, displayName })
  const answer = (reply, { status, body }) => send(reply, status, body)
  app.get('/', (request, reply) => answer(reply, routes.root(request.query)))
  app.get('/workday', (request, reply) => answer(reply, routes.workday(request.query)))

  // Fastify answers a method that has no route with 404 ("Return 404 instead
  // of 405", fastify/fastify#862), and routes only GET, HEAD, POST, PUT,
  // DELETE, PATCH, OPTIONS, TRACE and QUERY. The contract wants 405 with
  // Allow for every other method on a known route (RFC 9110). So the router
  // is taught every method Node's HTTP parser accepts (addHttpMethod; not
  // CONNECT, which Node hands to a 'connect' listener instead) and each
  // known path gets one route for all methods but GET and HEAD, answered in
  // its onRequest hook: before any body handling (Fastify would refuse a
  // QUERY without Content-Type with a 400 first).
  for (const method of METHODS) {
    if (method !== 'CONNECT' && !app.supportedMethods.includes(method)) app.addHttpMethod(method)
  }
  const others = app.supportedMethods.filter((m) => m !== 'GET' && m !== 'HEAD')
  const methodNotAllowed = (request, reply) => {
    reply.code(405).header('allow', ALLOW).header('content-type', CONTENT_TYPE).send('Method Not Allowed')
  }
  for (const url of ROUTES) {
    app.route({
      method: others,
      url,
      // Responding from the hook ends the request there (Fastify's Hooks
      // docs, "Respond to a request from a hook"): done is not called.
      onRequest: (request, reply, done) => methodNotAllowed(request, reply),
      handler: methodNotAllowed
    })
  }

  // Any other path: a short plain-text 404 (Fastify's default is JSON).
  app.setNotFoundHandler((request, reply) => {
    reply.code(404).header('content-type', CONTENT_TYPE).send('Not Found')
  })

  return app
}
