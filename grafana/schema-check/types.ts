// The types each piece of a dashboard JSON is checked against, all taken from @grafana/schema (Grafana's own
// TypeScript types, generated from its CUE schema). check.mjs writes one `const x: <Type> = <JSON>` per piece.
//
// Two adaptations, because the schema types describe the object *after* Grafana has filled in defaults:
//  * JSON has no enums: a string enum (e.g. VizOrientation) becomes the union of its string values.
//  * "Required" in these types does not mean "must be in the saved JSON": CUE defaults (defaultDashboard,
//    defaultAnnotationQuery, ...) and each panel plugin's option defaults are merged in on load. So every key is
//    optional (Saved<T>); only the few identity keys that have no default are required (Strict<T>).
// What stays strict is what catches generator bugs: every key must exist in the schema (excess-property check
// on object literals: a misspelt key fails) and every value must have the schema's type, including each
// datasource ref (panel, query, annotation, variable), which the schema types as DataSourceRef.
import type * as schema from '@grafana/schema';
import type * as barchart from '@grafana/schema/dist/esm/raw/composable/barchart/panelcfg/x/BarChartPanelCfg_types.gen.js';
import type * as gauge from '@grafana/schema/dist/esm/raw/composable/gauge/panelcfg/x/GaugePanelCfg_types.gen.js';
import type * as stat from '@grafana/schema/dist/esm/raw/composable/stat/panelcfg/x/StatPanelCfg_types.gen.js';
import type * as table from '@grafana/schema/dist/esm/raw/composable/table/panelcfg/x/TablePanelCfg_types.gen.js';
import type * as text from '@grafana/schema/dist/esm/raw/composable/text/panelcfg/x/TextPanelCfg_types.gen.js';
import type * as timeseries from '@grafana/schema/dist/esm/raw/composable/timeseries/panelcfg/x/TimeSeriesPanelCfg_types.gen.js';

/** T as it appears in saved JSON: string enums as their values, every key optional at every depth. */
export type Saved<T> = T extends string
  ? `${T}`
  : T extends readonly (infer U)[]
    ? Saved<U>[]
    : T extends object
      ? { [K in keyof T]?: Saved<T[K]> }
      : T;

type RequiredKeys<T> = { [K in keyof T]-?: {} extends Pick<T, K> ? never : K }[keyof T];

/** Saved<T>, but the keys T requires must be present, except those listed in Defaulted (the schema has a default). */
export type Strict<T, Defaulted extends keyof T = never> = Saved<T> & {
  [K in keyof T as K extends Exclude<RequiredKeys<T>, Defaulted> ? K : never]-?: Saved<T[K]>;
};

/** No custom field config: the plugin declares none, so fieldConfig.defaults.custom must be empty. */
type NoCustom = Record<string, never>;

/** Panel plugin id -> [options type, fieldConfig.defaults.custom type], from the plugin's generated panelcfg types. */
export interface PanelTypes {
  barchart: [barchart.Options, barchart.FieldConfig];
  gauge: [gauge.Options, NoCustom];
  stat: [stat.Options, NoCustom];
  table: [table.Options, table.FieldConfig];
  text: [text.Options, NoCustom];
  timeseries: [timeseries.Options, timeseries.FieldConfig];
}

/** A query. @grafana/schema has no Prometheus query type, so only the common DataQuery keys are checked
 *  (refId, hide, queryType, datasource as a DataSourceRef); expr, legendFormat, ... are datasource-specific. */
type Target = Strict<schema.DataQuery> & Record<string, unknown>;

/** A panel of plugin K: the generic Panel keys, with options and custom field config typed by the plugin. */
export type PanelInput<K extends keyof PanelTypes> = Strict<Omit<schema.Panel, 'options' | 'fieldConfig' | 'targets'>> & {
  options?: Saved<PanelTypes[K][0]>;
  fieldConfig?: Saved<Omit<schema.FieldConfigSource, 'defaults'>> & {
    defaults?: Saved<Omit<schema.FieldConfig, 'custom'>> & { custom?: Saved<PanelTypes[K][1]> };
  };
  targets?: Target[];
};

/** A row. Its nested panels are checked one by one as PanelInput; here they are only references. */
export type RowInput = Strict<Omit<schema.RowPanel, 'panels'>, 'collapsed'> & { panels?: unknown[] };

/** Keys the Prometheus datasource reads from the top level of an annotation (processEvents in Grafana's
 *  prometheus annotations.ts) that the generic AnnotationQuery schema does not list. expr and step are not
 *  here on purpose: they are legacy, prepareAnnotation moves them into target and deletes them. */
interface PrometheusAnnotation {
  tagKeys?: string;
  titleFormat?: string;
  textFormat?: string;
  useValueForTime?: boolean;
}
export type AnnotationInput = Strict<Omit<schema.AnnotationQuery, 'target'>, 'enable'> & { target?: Target } &
  PrometheusAnnotation;

/** A template variable. `definition` (the query text Grafana's variable editor shows) is in Grafana's runtime
 *  QueryVariableModel (@grafana/data) but not in the schema's VariableModel. */
export type VariableInput = Strict<schema.VariableModel> & { definition?: string };

/** The dashboard itself; panels, annotations and variables are checked one by one above, here only referenced. */
export type DashboardInput = Strict<Omit<schema.Dashboard, 'panels' | 'annotations' | 'templating'>> & {
  panels?: unknown[];
  annotations?: Saved<Omit<schema.AnnotationContainer, 'list'>> & { list?: unknown[] };
  templating?: { list?: unknown[] };
};
