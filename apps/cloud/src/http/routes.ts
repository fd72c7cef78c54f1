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
import {
  type DeliveryView,
  eventOfDelivery,
  listDeliveries,
  type StatusChangeView,
  statusHistory,
} from '../webhooks/deliveries.ts';
import { publishedKeys } from '../webhooks/keys.ts';
import { type EventView, getNodeEvent, listNodeEvents, redeliverEvent } from '../webhooks/outbox.ts';
import { accountOf, bearerAuth } from './auth.ts';
import { DeliveriesQuery, Delivery, DeliveryParams, HistoryQuery, StatusChange } from './delivery-schemas.ts';
import { type ApiUrlOf, nodeView } from './views.ts';

export interface RouteDeps {
  db: CloudDb;
  manager: NodeManager;
  /** Wakes the dispatcher after a manual redelivery. */
  wakeDispatcher: () => void;
  /** The driver's idea of a node's API address. */
  apiUrlOf?: ApiUrlOf;
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
const DeliveryRef = Type.Unsafe<DeliveryView>({ $ref: 'Delivery#' });
const StatusChangeRef = Type.Unsafe<StatusChangeView>({ $ref: 'StatusChange#' });

export function registerRoutes(app: ServiceApp, deps: RouteDeps): void {
  const { db, manager } = deps;
  const view = (n: Parameters<typeof nodeView>[1]) => nodeView(db, n, deps.apiUrlOf);
  app.addSchema(Node);
  app.addSchema(WebhookEvent);
  app.addSchema(Delivery);
  app.addSchema(StatusChange);

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
          return { data: await Promise.all(rows.map((n) => view(n))) };
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
          return reply.code(201).send({ data: await view(n), message: 'Node is starting' });
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
        async (req) => ({ data: await view(await manager.get(accountOf(req), req.params.nodeId)) }),
      );

      const settings = async (
        req: { params: { nodeId: string }; body: { webhookUrl?: string | null } } & Parameters<
          typeof accountOf
        >[0],
      ) => ({
        data: await view(await manager.updateSettings(accountOf(req), req.params.nodeId, req.body)),
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
            return reply.code(202).send({ data: await view(n), message });
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
          return reply.code(202).send({ data: await view(n), message: 'Node is being deleted' });
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
          return reply.code(202).send({ data: await view(n), message: 'Node is being deleted' });
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
          req.log.info(
            { audit: 'webhook.redeliver', account: n.account_id, nodeId: n.id, eventId: req.params.eventId },
            'webhook event queued for redelivery',
          );
          deps.wakeDispatcher();
          const e = await getNodeEvent(db, n.id, req.params.eventId);
          if (!e) throw CloudErrors.EVENT_NOT_FOUND.create(req.params.eventId);
          return reply.code(202).send({ data: e, message: 'Event queued for redelivery' });
        },
      );

      api.get(
        '/nodes/:nodeId/deliveries',
        {
          schema: {
            tags: ['webhooks'],
            description:
              "The node's webhook delivery attempts, newest first. Page with `before` = the previous page's `nextBefore` (null on the last page).",
            params: NodeIdParams,
            querystring: DeliveriesQuery,
            response: {
              200: Type.Object({
                data: Type.Array(DeliveryRef),
                nextBefore: Type.Union([Type.String(), Type.Null()]),
              }),
              ...errors,
            },
          },
        },
        async (req) => {
          const n = await manager.get(accountOf(req), req.params.nodeId);
          return listDeliveries(db, n.id, req.query.limit, req.query.before);
        },
      );

      api.post(
        '/nodes/:nodeId/deliveries/:deliveryId/redeliver',
        {
          schema: {
            tags: ['webhooks'],
            description:
              'Queues the event of this attempt (or this event id) again, due now, to the same endpoint and with the same event id (X-Service-Event-Id), so receivers deduplicating on it handle it once. Audit-logged.',
            params: DeliveryParams,
            response: { 202: one(EventRef), ...errors },
          },
        },
        async (req, reply) => {
          const n = await manager.get(accountOf(req), req.params.nodeId);
          const eventId = await eventOfDelivery(db, n.id, req.params.deliveryId);
          if (!eventId || !(await redeliverEvent(db, n.id, eventId)))
            throw CloudErrors.DELIVERY_NOT_FOUND.create(req.params.deliveryId);
          req.log.info(
            {
              audit: 'webhook.redeliver',
              account: n.account_id,
              nodeId: n.id,
              eventId,
              deliveryId: req.params.deliveryId,
            },
            'webhook event queued for redelivery',
          );
          deps.wakeDispatcher();
          const e = await getNodeEvent(db, n.id, eventId);
          if (!e) throw CloudErrors.DELIVERY_NOT_FOUND.create(req.params.deliveryId);
          return reply.code(202).send({ data: e, message: 'Event queued for redelivery' });
        },
      );

      api.get(
        '/nodes/:nodeId/status-history',
        {
          schema: {
            tags: ['nodes'],
            description:
              "The node's last `limit` status changes, oldest first (kept `[webhooks] retention_days`, the current status always).",
            params: NodeIdParams,
            querystring: HistoryQuery,
            response: { 200: Type.Object({ data: Type.Array(StatusChangeRef) }), ...errors },
          },
        },
        async (req) => {
          const n = await manager.get(accountOf(req), req.params.nodeId);
          return { data: await statusHistory(db, n.id, req.query.limit) };
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
