/** The cloud API routes (`/api/*`, Bearer-authenticated, scoped to the token's account). */

import {
  CreateNodeBody,
  EventParams,
  ListQuery,
  Node,
  NodeIdParams,
  type NodeView,
  PublicKeyResponse,
  SettingsBody,
  WebhookEvent,
} from '@rgbx/contracts/cloud';
import { ErrorEnvelope, type ServiceApp, type TSchema, Type } from '@rgbx/service-kit';
import type { CloudDb } from '../db/schema.ts';
import { CloudErrors } from '../errors.ts';
import type { NodeManager } from '../nodes/manager.ts';
import { publishedKeys } from '../webhooks/keys.ts';
import { type EventView, getNodeEvent, listNodeEvents, redeliverEvent } from '../webhooks/outbox.ts';
import { accountOf, bearerAuth } from './auth.ts';
import { nodeView } from './views.ts';

export interface RouteDeps {
  db: CloudDb;
  manager: NodeManager;
  /** Wakes the dispatcher after a manual redelivery. */
  wakeDispatcher: () => void;
}

const errors = {
  400: ErrorEnvelope.ref,
  401: ErrorEnvelope.ref,
  404: ErrorEnvelope.ref,
  409: ErrorEnvelope.ref,
};
const one = <T extends TSchema>(schema: T) =>
  Type.Object({ data: schema, message: Type.Optional(Type.String()) });
const NodeRef = Type.Unsafe<NodeView>({ $ref: 'Node#' });
const EventRef = Type.Unsafe<EventView>({ $ref: 'WebhookEvent#' });

export function registerRoutes(app: ServiceApp, deps: RouteDeps): void {
  const { db, manager } = deps;
  app.addSchema(Node);
  app.addSchema(WebhookEvent);

  app.register(
    async (instance) => {
      // Child instances keep the TypeBox provider at runtime; the type is restored here.
      const api = instance as unknown as ServiceApp;
      api.addHook('onRequest', bearerAuth(db));

      api.get(
        '/nodes',
        {
          schema: {
            tags: ['nodes'],
            response: { 200: Type.Object({ data: Type.Array(NodeRef) }), ...errors },
          },
        },
        async (req) => {
          const rows = await manager.list(accountOf(req));
          return { data: await Promise.all(rows.map((n) => nodeView(db, n))) };
        },
      );

      api.post(
        '/nodes',
        {
          schema: {
            tags: ['nodes'],
            body: CreateNodeBody,
            response: { 201: one(NodeRef), ...errors },
          },
        },
        async (req, reply) => {
          const n = await manager.create(accountOf(req), {
            name: req.body.name,
            network: req.body.network,
            webhookUrl: req.body.settings?.webhookUrl ?? null,
          });
          return reply.code(201).send({ data: await nodeView(db, n), message: 'Node is starting' });
        },
      );

      api.get(
        '/nodes/:nodeId',
        {
          schema: {
            tags: ['nodes'],
            params: NodeIdParams,
            response: { 200: one(NodeRef), ...errors },
          },
        },
        async (req) => ({ data: await nodeView(db, await manager.get(accountOf(req), req.params.nodeId)) }),
      );

      const settings = async (
        req: { params: { nodeId: string }; body: { webhookUrl?: string | null } } & Parameters<
          typeof accountOf
        >[0],
      ) => ({
        data: await nodeView(db, await manager.updateSettings(accountOf(req), req.params.nodeId, req.body)),
      });
      const settingsSchema = {
        tags: ['nodes'],
        params: NodeIdParams,
        body: SettingsBody,
        response: { 200: one(NodeRef), ...errors },
      };
      api.post('/nodes/:nodeId/settings', { schema: settingsSchema }, settings as never);
      api.patch('/nodes/:nodeId/settings', { schema: settingsSchema }, settings as never);

      const op = (name: 'stop' | 'start' | 'restart', message: string) =>
        api.post(
          `/nodes/:nodeId/${name}`,
          {
            schema: {
              tags: ['nodes'],
              params: NodeIdParams,
              response: { 202: one(NodeRef), ...errors },
            },
          },
          async (req, reply) => {
            const account = accountOf(req);
            const id = req.params.nodeId;
            const n =
              name === 'stop'
                ? await manager.pause(account, id)
                : name === 'start'
                  ? await manager.resume(account, id)
                  : await manager.restart(account, id);
            return reply.code(202).send({ data: await nodeView(db, n), message });
          },
        );
      op('stop', 'Node is pausing');
      op('start', 'Node is starting');
      op('restart', 'Node is restarting');

      api.delete(
        '/nodes/:nodeId',
        {
          schema: {
            tags: ['nodes'],
            params: NodeIdParams,
            response: { 202: one(NodeRef), ...errors },
          },
        },
        async (req, reply) => {
          const n = await manager.remove(accountOf(req), req.params.nodeId);
          return reply.code(202).send({ data: await nodeView(db, n), message: 'Node is being deleted' });
        },
      );

      // ThunderStack-compatible form of the same operation: DELETE /api/nodes {"destroyNodeId": "…"}.
      api.delete(
        '/nodes',
        {
          schema: {
            tags: ['nodes'],
            body: Type.Object(
              { destroyNodeId: Type.String({ format: 'uuid' }) },
              { propertyNames: { enum: ['destroyNodeId'] } },
            ),
            response: { 202: one(NodeRef), ...errors },
          },
        },
        async (req, reply) => {
          const n = await manager.remove(accountOf(req), req.body.destroyNodeId);
          return reply.code(202).send({ data: await nodeView(db, n), message: 'Node is being deleted' });
        },
      );

      api.get(
        '/nodes/:nodeId/webhooks/events',
        {
          schema: {
            tags: ['webhooks'],
            params: NodeIdParams,
            querystring: ListQuery,
            response: { 200: Type.Object({ data: Type.Array(EventRef) }), ...errors },
          },
        },
        async (req) => {
          const n = await manager.get(accountOf(req), req.params.nodeId);
          return { data: await listNodeEvents(db, n.id, req.query.limit) };
        },
      );

      api.get(
        '/nodes/:nodeId/webhooks/events/:eventId',
        {
          schema: {
            tags: ['webhooks'],
            params: EventParams,
            response: { 200: one(EventRef), ...errors },
          },
        },
        async (req) => {
          const n = await manager.get(accountOf(req), req.params.nodeId);
          const e = await getNodeEvent(db, n.id, req.params.eventId);
          if (!e) throw CloudErrors.EVENT_NOT_FOUND.create(req.params.eventId);
          return { data: e };
        },
      );

      api.post(
        '/nodes/:nodeId/webhooks/events/:eventId/redeliver',
        {
          schema: {
            tags: ['webhooks'],
            params: EventParams,
            response: { 202: one(EventRef), ...errors },
          },
        },
        async (req, reply) => {
          const n = await manager.get(accountOf(req), req.params.nodeId);
          if (!(await redeliverEvent(db, n.id, req.params.eventId)))
            throw CloudErrors.EVENT_NOT_FOUND.create(req.params.eventId);
          deps.wakeDispatcher();
          const e = await getNodeEvent(db, n.id, req.params.eventId);
          if (!e) throw CloudErrors.EVENT_NOT_FOUND.create(req.params.eventId);
          return reply.code(202).send({ data: e, message: 'Event queued for redelivery' });
        },
      );

      api.get(
        '/webhook-public-key',
        {
          schema: {
            tags: ['webhooks'],
            response: { 200: PublicKeyResponse, 401: ErrorEnvelope.ref },
          },
        },
        async () => {
          const keys = await publishedKeys(db);
          const current = keys.find((k) => k.status === 'current');
          if (!current) throw new Error('no current signing key');
          return {
            data: current.pem,
            keyId: current.keyId,
            algorithm: 'RSA-SHA256' as const,
            padding: 'PKCS1-v1_5' as const,
            signatureHeader: 'X-Service-Signature' as const,
            signatureEncoding: 'base64' as const,
            keys,
          };
        },
      );
    },
    { prefix: '/api' },
  );
}
