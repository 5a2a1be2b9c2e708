%% The Troupe benchmark workloads on Erlang/OTP (Debian's erlang-nox), written the way
%% Erlang programs do it: plain processes with spawn/send/receive for the message-passing
%% workloads (the classic Erlang ring), spawn_monitor + 'DOWN' to await a stop, an ETS table
%% as the name registry and pg for process groups. reader_db's figure uses plain processes
%% too (client ! -> DB ! -> reader ! -> client, what an Erlang performance engineer writes
%% for raw message passing); a second row labelled `variant: gen_server` runs the same path
%% as gen_servers (the DB's handle_call hands the caller's From to a reader, which answers
%% with gen_server:reply/2; clients keep their asks in flight with gen_server:send_request/4
%% and a request-id collection).
%%
%% Rounds: --warmup W unprinted rounds, then --samples K printed ones. Every line carries
%% other_cpu_s (other OS processes' CPU time during the round, /proc/stat minus this VM's
%% /proc/self/stat) and window_s, read as troupe-bench-contract reads them; a round starts
%% once the previous round's processes are gone (the VM's process count is back to what it
%% was). Memory: RSS growth from a settled baseline (every process garbage-collected, the
%% peak reset with /proc/self/clear_refs, VmRSS), the growth being VmHWM minus it.
%%
%% Threads: the launcher script (peer-erlang) starts the VM with +S N:N, N = --threads, so
%% N schedulers run the processes.
%%
%% Usage: peer-erlang <workload> [--threads N] [--samples K] [--warmup W] [params]
%% (see ../README.md). The Savina workloads (savina_*) are run by peer_savina.
-module(peer_erlang).
-export([main/0]).
%% The reporter and round helpers, shared with the Savina workloads (peer_savina).
-export([open_round/1, await_processes/1, figure/6]).

-define(GROUPS, 10).

%% ------------------------------------------------------------------ entry point

main() ->
    Args = init:get_plain_arguments(),
    case Args of
        ["savina_" ++ _ | _] -> peer_savina:main(Args);
        %% The async actor workloads of issue 27 are not ported to Erlang.
        [W | _] when W =:= "async_pingpong"; W =:= "async_ask_chain"; W =:= "async_io" ->
            io:format("{\"framework\":\"erlang\",\"workload\":\"~s\",\"unsupported\":"
                      "\"not ported to Erlang: issue 27's async workloads compare kameo, "
                      "ractor and actix\"}~n", [W]),
            halt(0);
        _ -> ok
    end,
    {Workload, Threads, Samples, Warmup, Params} = parse(Args),
    put(threads, Threads),
    %% pg outlives the rounds (registry uses it): start it before counting processes.
    {ok, _} = pg:start(pg),
    Settled = erlang:system_info(process_count),
    lists:foreach(
      fun(S) ->
              log("erlang ~s round ~p", [Workload, S]),
              open_round(S =< Warmup),
              run(Workload, Params, S),
              await_processes(Settled)
      end, lists:seq(1, Warmup + Samples)),
    halt(0).

%% Waits until the round's processes are gone (the count is back to Settled).
await_processes(Settled) ->
    case erlang:system_info(process_count) =< Settled of
        true -> ok;
        false -> timer:sleep(1), await_processes(Settled)
    end.

%% A warm-up round prints nothing; every round opens a CPU window.
open_round(Warmup) ->
    put(warming_up, Warmup),
    put(window, {machine_busy_ticks(), own_ticks(), now_ns()}).

machine_busy_ticks() ->
    {ok, Bin} = file:read_file("/proc/stat"),
    [Cpu | _] = string:split(binary_to_list(Bin), "\n"),
    [_ | Fields] = string:lexemes(Cpu, " "),
    Vs = [list_to_integer(F) || F <- lists:sublist(Fields, 8)],
    lists:sum(Vs) - lists:nth(4, Vs) - lists:nth(5, Vs).

own_ticks() ->
    {ok, Bin} = file:read_file("/proc/self/stat"),
    Text = binary_to_list(Bin),
    Rest = lists:nthtail(string:rchr(Text, $)) + 1, Text),
    Fields = string:lexemes(Rest, " "),
    list_to_integer(lists:nth(12, Fields)) + list_to_integer(lists:nth(13, Fields)).

%% RSS growth from a settled baseline (see the module doc).
rss_baseline() ->
    timer:sleep(50),
    [erlang:garbage_collect(P) || P <- erlang:processes()],
    ok = file:write_file("/proc/self/clear_refs", "5"),
    current_rss_bytes().

rss_growth(Base) -> max(0, peak_rss_bytes() - Base).

run("ring", P, _) -> ring(get_p(rings, P), get_p(actors, P), get_p(laps, P));
run("pingpong", P, _) -> pingpong(get_p(round_trips, P));
run("mailbox_performance", P, _) ->
    mailbox_performance(get_p(senders, P), get_p(messages, P));
run("actor_creation", P, _) -> actor_creation(get_p(pow, P));
run("spawn_and_await", P, _) -> spawn_and_await(get_p(count, P));
run("reader_db", P, _) ->
    Args = [get_p(reads, P), get_p(clients, P), get_p(readers, P), get_p(outstanding, P)],
    apply(fun reader_db/4, Args),
    apply(fun reader_db_gen_server/4, Args);
run("registry", P, S) ->
    [registry(Size, S) || Size <- get_p(sizes, P)],
    ok.

get_p(K, P) -> proplists:get_value(K, P).

%% ------------------------------------------------------------------ command line

-define(USAGE,
        "usage: peer-erlang <workload> [--threads N] [--samples K] [--warmup W] [params]~n"
        "  ring --rings 10 --actors 10000 --laps 100 | pingpong --round-trips 1000000~n"
        "  mailbox_performance --senders 100 --messages 1000000 | actor_creation --pow 20~n"
        "  spawn_and_await --count 100000~n"
        "  reader_db --reads 3100000 --clients 2 --readers 2 --outstanding 64~n"
        "  registry --sizes 10,100,1000,10000~n"
        "  savina_pingpong ... savina_banking: the Savina workloads (peer_savina.erl)~n").

bad_usage(Fmt, Args) ->
    io:format(standard_error, "error: " ++ Fmt ++ "~n" ++ ?USAGE, Args),
    halt(2).

defaults("ring") -> [{rings, 10}, {actors, 10000}, {laps, 100}];
defaults("pingpong") -> [{round_trips, 1000000}];
defaults("mailbox_performance") -> [{senders, 100}, {messages, 1000000}];
defaults("actor_creation") -> [{pow, 20}];
defaults("spawn_and_await") -> [{count, 100000}];
defaults("reader_db") -> [{reads, 3100000}, {clients, 2}, {readers, 2}, {outstanding, 64}];
defaults("registry") -> [{sizes, [10, 100, 1000, 10000]}];
defaults(Other) -> bad_usage("unknown workload `~s`", [Other]).

parse([]) -> bad_usage("missing workload", []);
parse([Workload | Rest]) ->
    Defaults = defaults(Workload),
    Flags = flags(Rest, []),
    {Threads, F1} = take(threads, Flags, 2),
    {Samples, F1b} = take(samples, F1, 1),
    {Warmup, F2} = take_warmup(F1b),
    {Params, F3} = lists:mapfoldl(
                     fun({K, D}, Acc) -> {V, Acc2} = take(K, Acc, D), {{K, V}, Acc2} end,
                     F2, Defaults),
    case F3 of
        [] -> ok;
        [{K, _} | _] -> bad_usage("unknown flag `--~s` for workload `~s`", [K, Workload])
    end,
    case Workload of
        "actor_creation" ->
            Pow = get_p(pow, Params),
            (Pow >= 1 andalso Pow =< 40) orelse bad_usage("--pow must be within 1..=40", []);
        _ -> ok
    end,
    {Workload, Threads, Samples, Warmup, Params}.

%% --warmup may be 0 (the other flags must be at least 1).
take_warmup(Flags) ->
    case [V || {K, V} <- Flags, lists:flatten(K) =:= "warmup"] of
        [] -> {0, Flags};
        Values ->
            V = lists:last(Values),
            N = case catch list_to_integer(string:trim(V)) of
                    I when is_integer(I), I >= 0 -> I;
                    _ -> bad_usage("`--warmup` wants a non-negative integer, got `~s`", [V])
                end,
            {N, [KV || {K, _} = KV <- Flags, lists:flatten(K) =/= "warmup"]}
    end.

flags([], Acc) -> lists:reverse(Acc);
flags(["--" ++ Flag | Rest], Acc) ->
    {Key, Value, Rest2} =
        case string:split(Flag, "=") of
            [K, V] -> {K, V, Rest};
            [K] ->
                case Rest of
                    [V | R] -> {K, V, R};
                    [] -> bad_usage("flag `--~s` needs a value", [K])
                end
        end,
    flags(Rest2, [{string:replace(Key, "-", "_", all), Value} | Acc]);
flags([Other | _], _) -> bad_usage("unexpected argument `~s`", [Other]).

take(Key, Flags, Default) ->
    Name = atom_to_list(Key),
    case [V || {K, V} <- Flags, lists:flatten(K) =:= Name] of
        [] -> {Default, Flags};
        Values ->
            Rest = [KV || {K, _} = KV <- Flags, lists:flatten(K) =/= Name],
            {value(Key, lists:last(Values)), Rest}
    end.

value(sizes, V) -> [num("sizes", S) || S <- string:split(V, ",", all)];
value(Key, V) -> num(atom_to_list(Key), V).

num(Key, V) ->
    case catch list_to_integer(string:trim(lists:flatten(string:replace(V, "_", "", all)))) of
        N when is_integer(N), N >= 1 -> N;
        _ -> bad_usage("`--~s` wants a positive integer, got `~s`", [Key, V])
    end.

%% ------------------------------------------------------------------ output

log(Fmt, Args) -> io:format(standard_error, Fmt ++ "~n", Args).

fail(Fmt, Args) ->
    io:format(standard_error, "FAILED: " ++ Fmt ++ "~n", Args),
    halt(1).

now_ns() -> erlang:monotonic_time(nanosecond).

secs_since(T0) -> (now_ns() - T0) / 1.0e9.

status_kb(Field) ->
    {ok, Bin} = file:read_file("/proc/self/status"),
    Lines = string:split(binary_to_list(Bin), "\n", all),
    case [L || L <- Lines, lists:prefix(Field, L)] of
        [Line | _] ->
            [Num | _] = string:lexemes(string:prefix(Line, Field), " \tkB"),
            list_to_integer(Num);
        [] -> 0
    end.

peak_rss_bytes() -> status_kb("VmHWM:") * 1024.
current_rss_bytes() -> status_kb("VmRSS:") * 1024.

json_num(X) when is_integer(X) -> integer_to_list(X);
json_num(X) when is_float(X) -> float_to_list(X, [short]).

json_params(Params) ->
    "{" ++ lists:join(",", [json_kv(K, V) || {K, V} <- Params]) ++ "}".

json_kv(K, V) when is_list(V), is_integer(hd(V)), V =/= [], not is_tuple(V) ->
    case io_lib:printable_list(V) of
        true -> io_lib:format("\"~s\":\"~s\"", [K, V]);
        false -> io_lib:format("\"~s\":[~s]", [K, lists:join(",", [json_num(I) || I <- V])])
    end;
json_kv(K, V) when is_atom(V) -> io_lib:format("\"~s\":\"~s\"", [K, V]);
json_kv(K, V) -> io_lib:format("\"~s\":~s", [K, json_num(V)]).

figure(Workload, Params, Secs, Rate, Unit) -> figure(Workload, Params, Secs, Rate, Unit, []).

figure(Workload, Params, Secs, Rate, Unit, Extras) ->
    case get(warming_up) of
        true -> ok;
        _ -> print_figure(Workload, Params, Secs, Rate, Unit, Extras)
    end.

print_figure(Workload, Params, Secs, Rate, Unit, Extras) ->
    {Machine0, Own0, T0} = get(window),
    Other = max(0, (machine_busy_ticks() - Machine0) - (own_ticks() - Own0)) / 100,
    Line = io_lib:format(
             "{\"framework\":\"erlang\",\"workload\":\"~s\",\"params\":~s,\"seconds\":~s,"
             "\"rate\":~s,\"unit\":\"~s\",\"rss_mb\":~s,\"threads\":~p,"
             "\"other_cpu_s\":~s,\"window_s\":~s~s}~n",
             [Workload, json_params(Params), json_num(float(Secs)), json_num(float(Rate)), Unit,
              json_num(peak_rss_bytes() / 1.0e6), get(threads), json_num(float(Other)),
              json_num(secs_since(T0)),
              [io_lib:format(",\"~s\":~s", [K, json_num(float(V))]) || {K, V} <- Extras]]),
    io:put_chars(standard_io, Line).

%% A spawn beyond the VM's process limit (+P, which the launcher raises where a workload
%% needs it) must fail loudly rather than leave the workload waiting forever.
spawn_or_fail(Fun) ->
    try spawn(Fun)
    catch error:system_limit ->
            fail("process limit (~p) reached; raise +P", [erlang:system_info(process_limit)])
    end.

%% ------------------------------------------------------------------ ring

ring_node(Ring, Index, Next, Sink) ->
    receive
        {token, 0} ->
            Sink ! {done, Ring, Index},
            ring_node(Ring, Index, Next, Sink);
        {token, N} ->
            Next ! {token, N - 1},
            ring_node(Ring, Index, Next, Sink);
        {next, NewNext} ->
            ring_node(Ring, Index, NewNext, Sink);
        stop ->
            ok
    end.

%% Spawns a ring back to front, so each node starts knowing its successor; the last node
%% learns the first one afterwards. Returns the head and all nodes.
make_ring(R, N, Sink) ->
    {Head, All} = lists:foldl(
                    fun(I, {Next, Acc}) ->
                            P = spawn_or_fail(fun() -> ring_node(R, I, Next, Sink) end),
                            {P, [P | Acc]}
                    end, {undefined, []}, lists:seq(N - 1, 0, -1)),
    lists:last(All) ! {next, Head},
    {Head, All}.

ring(Rings, Actors, Laps) ->
    Self = self(),
    T0 = now_ns(),
    RingsBuilt = [make_ring(R, Actors, Self) || R <- lists:seq(0, Rings - 1)],
    Creation = secs_since(T0),
    Hops = Actors * Laps,
    T1 = now_ns(),
    [Head ! {token, Hops} || {Head, _} <- RingsBuilt],
    Expected = Hops rem Actors,
    Finished = lists:foldl(
                 fun(_, Done) ->
                         receive
                             {done, R, Expected} ->
                                 lists:member(R, Done) andalso fail("ring ~p finished twice", [R]),
                                 [R | Done];
                             {done, R, Index} ->
                                 fail("ring ~p: token ended at node ~p", [R, Index])
                         end
                 end, [], lists:seq(1, Rings)),
    Secs = secs_since(T1),
    length(Finished) =:= Rings orelse fail("ring: not every ring finished", []),
    figure("ring", [{rings, Rings}, {actors, Actors}, {laps, Laps}], Secs,
           Rings * Actors * Laps / Secs, "hops/s", [{creation_seconds, Creation}]),
    [P ! stop || {_, All} <- RingsBuilt, P <- All],
    ok.

%% ------------------------------------------------------------------ pingpong

%% Pong is spawned knowing ping, so no ball carries a reply address.
pong(Ping) ->
    receive
        {ball, N} -> Ping ! {ball, N}, pong(Ping);
        stop -> ok
    end.

ping(RoundTrips, Sink) ->
    Self = self(),
    Pong = spawn(fun() -> pong(Self) end),
    Sink ! {pong, Pong},
    ping(Pong, RoundTrips, Sink).

ping(Pong, RoundTrips, Sink) ->
    receive
        {ball, N} when N >= RoundTrips -> Sink ! {done, N};
        {ball, N} -> Pong ! {ball, N + 1}, ping(Pong, RoundTrips, Sink)
    end.

pingpong(RoundTrips) ->
    Self = self(),
    Ping = spawn(fun() -> ping(RoundTrips, Self) end),
    Pong = receive {pong, P} -> P end,
    T0 = now_ns(),
    Ping ! {ball, 0},
    N = receive {done, Got} -> Got end,
    Secs = secs_since(T0),
    N =:= RoundTrips orelse fail("pingpong: ~p round trips, expected ~p", [N, RoundTrips]),
    figure("pingpong", [{round_trips, RoundTrips}], Secs, RoundTrips / Secs, "round-trips/s",
           [{ns_per_op, Secs * 1.0e9 / RoundTrips}]),
    Pong ! stop,
    ok.

%% ------------------------------------------------------------------ mailbox_performance

%% Counts and sums the payloads; reports the sum when it has all of them.
receiver(Count, Sum, Expected, Sink) when Count =:= Expected -> Sink ! {done, Sum};
receiver(Count, Sum, Expected, Sink) ->
    receive {msg, X} -> receiver(Count + 1, Sum + X, Expected, Sink) end.

sender(Dest, Messages) ->
    receive go -> send_n(Dest, Messages) end.

%% Sends the payloads Messages, Messages - 1, ..., 1.
send_n(_, 0) -> ok;
send_n(Dest, N) -> Dest ! {msg, N}, send_n(Dest, N - 1).

mailbox_performance(Senders, Messages) ->
    Self = self(),
    Expected = Senders * Messages,
    Recv = spawn(fun() -> receiver(0, 0, Expected, Self) end),
    All = [spawn(fun() -> sender(Recv, Messages) end) || _ <- lists:seq(1, Senders)],
    T0 = now_ns(),
    [S ! go || S <- All],
    Sum = receive {done, C} -> C end,
    Secs = secs_since(T0),
    ExpectedSum = Senders * (Messages * (Messages + 1) div 2),
    Sum =:= ExpectedSum orelse fail("receiver summed ~p, expected ~p", [Sum, ExpectedSum]),
    figure("mailbox_performance", [{senders, Senders}, {messages, Messages}], Secs,
           Expected / Secs, "msgs/s").

%% ------------------------------------------------------------------ actor_creation

%% tree(X) spawns its two children as it starts (no extra message per node, as on every
%% other side); tree(1) answers 1 at once.
tree(Parent, 1) ->
    Parent ! {result, 1};
tree(Parent, X) ->
    Self = self(),
    [spawn_or_fail(fun() -> tree(Self, X - 1) end) || _ <- [1, 2]],
    R1 = receive {result, A} -> A end,
    R2 = receive {result, B} -> B end,
    Parent ! {result, 1 + R1 + R2}.

actor_creation(Pow) ->
    Actors = (1 bsl Pow) - 1,
    Self = self(),
    RssBase = rss_baseline(),
    T0 = now_ns(),
    spawn(fun() -> tree(Self, Pow) end),
    Answer = receive {result, R} -> R end,
    Secs = secs_since(T0),
    Answer =:= Actors orelse fail("actor_creation: root answered ~p, expected ~p",
                                  [Answer, Actors]),
    Grown = rss_growth(RssBase),
    figure("actor_creation", [{pow, Pow}], Secs, Actors / Secs, "actors/s",
           [{bytes_per_actor, Grown / Actors}]).

%% ------------------------------------------------------------------ spawn_and_await

spawn_await_n(0) -> ok;
spawn_await_n(N) ->
    {Pid, Ref} = spawn_monitor(fun() -> ok end),
    receive {'DOWN', Ref, process, Pid, normal} -> ok end,
    spawn_await_n(N - 1).

spawn_and_await(Count) ->
    T0 = now_ns(),
    spawn_await_n(Count),
    Secs = secs_since(T0),
    figure("spawn_and_await", [{count, Count}], Secs, Count / Secs, "ops/s",
           [{ns_per_op, Secs * 1.0e9 / Count}]).

%% ------------------------------------------------------------------ reader_db

customers() ->
    Rows = [{"Alfreds Futterkiste", "Berlin", "Germany"},
            {"Ana Trujillo Emparedados y helados", "Mexico D.F.", "Mexico"},
            {"Antonio Moreno Taqueria", "Mexico D.F.", "Mexico"},
            {"Around the Horn", "London", "UK"},
            {"Berglunds snabbkop", "Lulea", "Sweden"},
            {"Blauer See Delikatessen", "Mannheim", "Germany"},
            {"Blondel pere et fils", "Strasbourg", "France"},
            {"Bolido Comidas preparadas", "Madrid", "Spain"},
            {"Bon app'", "Marseille", "France"},
            {"Bottom-Dollar Markets", "Tsawassen", "Canada"},
            {"B's Beverages", "London", "UK"},
            {"Cactus Comidas para llevar", "Buenos Aires", "Argentina"},
            {"Centro comercial Moctezuma", "Mexico D.F.", "Mexico"},
            {"Chop-suey Chinese", "Bern", "Switzerland"},
            {"Comercio Mineiro", "Sao Paulo", "Brazil"},
            {"Consolidated Holdings", "London", "UK"},
            {"Drachenblut Delikatessen", "Aachen", "Germany"},
            {"Du monde entier", "Nantes", "France"},
            {"Eastern Connection", "London", "UK"},
            {"Ernst Handel", "Graz", "Austria"},
            {"Familia Arquibaldo", "Sao Paulo", "Brazil"},
            {"FISSA Fabrica Inter. Salchichas S.A.", "Madrid", "Spain"},
            {"Folies gourmandes", "Lille", "France"},
            {"Folk och fa HB", "Bracke", "Sweden"},
            {"Frankenversand", "Munchen", "Germany"},
            {"France restauration", "Nantes", "France"},
            {"Franchi S.p.A.", "Torino", "Italy"},
            {"Furia Bacalhau e Frutos do Mar", "Lisboa", "Portugal"},
            {"Galeria del gastronomo", "Barcelona", "Spain"}],
    {Table, _} = lists:mapfoldl(
                   fun({Name, City, Country}, Id) ->
                           {#{id => Id, name => list_to_binary(Name),
                              city => list_to_binary(City), country => list_to_binary(Country)},
                            Id + 1}
                   end, 1, Rows),
    list_to_tuple(Table).

%% Plain processes (Erlang's figure): a client sends {read, Id, self()} to the DB, which
%% hands it on to the next reader round robin; the reader answers the client with the row.
db_loop(Readers, Next) ->
    receive
        {read, _, _} = Read ->
            element(Next + 1, Readers) ! Read,
            db_loop(Readers, (Next + 1) rem tuple_size(Readers));
        stop -> ok
    end.

reader_loop(Table) ->
    receive
        {read, Id, From} -> From ! {row, Id, element(Id, Table)}, reader_loop(Table);
        stop -> ok
    end.

%% The writer owns the table; the workload is read-only, so it only holds it.
writer_loop(Table) ->
    receive stop -> Table end.

reader_db(Reads, Clients, Readers, Outstanding) ->
    Table = customers(),
    Writer = spawn(fun() -> writer_loop(Table) end),
    ReaderPids = [spawn(fun() -> reader_loop(Table) end) || _ <- lists:seq(1, Readers)],
    RTuple = list_to_tuple(ReaderPids),
    Db = spawn(fun() -> db_loop(RTuple, 0) end),
    drive_clients(fun plain_client/5, Db, [Reads, Clients, Readers, Outstanding], []),
    [P ! stop || P <- [Db, Writer | ReaderPids]],
    ok.

%% Starts the clients (Client(Db, First, Share, Outstanding, Sink)), times their reads from
%% `go` to the last `client_done`, checks the count and prints the figure (with Labels).
drive_clients(Client, Db, [Reads, Clients, Readers, Outstanding], Labels) ->
    Self = self(),
    {ClientPids, _} =
        lists:mapfoldl(
          fun(Share, First) ->
                  P = spawn(fun() -> Client(Db, First, Share, Outstanding, Self) end),
                  {P, First + Share}
          end, 0, shares(Reads, Clients)),
    T0 = now_ns(),
    [C ! go || C <- ClientPids],
    Total = lists:sum([receive {client_done, N} -> N end || _ <- ClientPids]),
    Secs = secs_since(T0),
    Total =:= Reads orelse fail("reader_db: ~p good reads, expected ~p", [Total, Reads]),
    figure("reader_db", [{reads, Reads}, {clients, Clients}, {readers, Readers},
                         {outstanding, Outstanding} | Labels],
           Secs, Reads / Secs, "reads/s", [{ns_per_read, Secs * 1.0e9 / Reads}]).

plain_client(Db, First, Reads, Outstanding, Sink) ->
    receive go -> ok end,
    End = First + Reads,
    Initial = min(Outstanding, Reads),
    [Db ! {read, I rem 29 + 1, self()} || I <- lists:seq(First, First + Initial - 1)],
    Sink ! {client_done, plain_client_loop(Db, First + Initial, End, Reads, 0)}.

plain_client_loop(_, _, _, Reads, Reads) -> Reads;
plain_client_loop(Db, Next, End, Reads, Good) ->
    receive
        {row, Id, #{id := Id}} ->
            Next < End andalso (Db ! {read, Next rem 29 + 1, self()}),
            plain_client_loop(Db, Next + 1, End, Reads, Good + 1);
        {row, Id, Row} ->
            fail("reader_db: asked for ~p, got ~p", [Id, Row])
    end.

%% The gen_server row (`variant: gen_server`): the DB, its readers and its writer are
%% gen_servers of module peer_erlang_db.
start_server(State) ->
    {ok, Pid} = gen_server:start(peer_erlang_db, State, []),
    Pid.

reader_db_gen_server(Reads, Clients, Readers, Outstanding) ->
    Table = customers(),
    Writer = start_server({writer, Table}),
    ReaderPids = [start_server({reader, Table}) || _ <- lists:seq(1, Readers)],
    Db = start_server({db, list_to_tuple(ReaderPids), 0}),
    drive_clients(fun client/5, Db, [Reads, Clients, Readers, Outstanding],
                  [{variant, gen_server}]),
    [gen_server:stop(P) || P <- [Db, Writer | ReaderPids]],
    ok.

shares(Total, Parts) ->
    [Total div Parts + (case I < Total rem Parts of true -> 1; false -> 0 end)
     || I <- lists:seq(0, Parts - 1)].

client(Db, First, Reads, Outstanding, Sink) ->
    receive go -> ok end,
    End = First + Reads,
    Initial = min(Outstanding, Reads),
    Ids = lists:foldl(fun(I, Coll) -> ask(Db, I, Coll) end,
                      gen_server:reqids_new(), lists:seq(First, First + Initial - 1)),
    Good = client_loop(Db, First + Initial, End, Ids, 0),
    Sink ! {client_done, Good}.

ask(Db, I, Coll) ->
    Id = I rem 29 + 1,
    gen_server:send_request(Db, {read, Id}, Id, Coll).

client_loop(Db, Next, End, Coll, Good) ->
    case gen_server:receive_response(Coll, infinity, true) of
        no_request ->
            Good;
        {{reply, #{id := Id}}, Id, Coll2} ->
            Coll3 = case Next < End of
                        true -> ask(Db, Next, Coll2);
                        false -> Coll2
                    end,
            client_loop(Db, Next + 1, End, Coll3, Good + 1);
        {{reply, Row}, Id, _} ->
            fail("reader_db: asked for ~p, got ~p", [Id, Row]);
        {{error, Reason}, Id, _} ->
            fail("reader_db: read of ~p failed: ~p", [Id, Reason])
    end.

%% ------------------------------------------------------------------ registry

member(Group, Driver) ->
    ok = pg:join(Group, self()),
    Driver ! {ready, self()},
    member_loop(Driver).

%% A member knows its driver from the start, so a ping carries no reply address.
member_loop(Driver) ->
    receive
        ping -> Driver ! ack, member_loop(Driver);
        stop -> ok
    end.

registry(Size, Sample) ->
    Self = self(),
    Prefix = io_lib:format("s~p-k~p-", [Sample, Size]),
    Tab = ets:new(registry, [set, public, {read_concurrency, true}]),
    Groups = list_to_tuple([iolist_to_binary([Prefix, "group-", integer_to_list(G)])
                            || G <- lists:seq(0, ?GROUPS - 1)]),
    Names = list_to_tuple([iolist_to_binary([Prefix, "actor-", integer_to_list(I)])
                           || I <- lists:seq(0, Size - 1)]),
    Members = list_to_tuple(
                [begin
                     Group = element(I rem ?GROUPS + 1, Groups),
                     P = spawn(fun() -> member(Group, Self) end),
                     true = ets:insert(Tab, {element(I + 1, Names), P}),
                     P
                 end || I <- lists:seq(0, Size - 1)]),
    [receive {ready, _} -> ok end || _ <- lists:seq(1, Size)],

    Lookups = max(200000 div Size, 2) * Size,
    T0 = now_ns(),
    find_loop(Tab, Names, Members, Size, Lookups),
    FindSecs = secs_since(T0),
    figure("registry", [{size, Size}, {op, find}], FindSecs, FindSecs * 1.0e9 / Lookups, "ns/op"),

    GroupSize = (Size + ?GROUPS - 1) div ?GROUPS,
    length(pg:get_members(element(1, Groups))) =:= GroupSize orelse
        fail("registry: group has ~p members, expected ~p",
             [length(pg:get_members(element(1, Groups))), GroupSize]),
    Reps = min(max(100000 div GroupSize, 10), 10000),
    T1 = now_ns(),
    dispatch_loop(element(1, Groups), Reps),
    Secs = secs_since(T1),
    receive ack -> fail("registry: a dispatch reached a member twice", []) after 0 -> ok end,
    figure("registry", [{size, Size}, {op, dispatch_group}], Secs,
           Secs * 1.0e9 / (Reps * GroupSize), "ns/op"),
    [P ! stop || P <- tuple_to_list(Members)],
    ets:delete(Tab),
    ok.

find_loop(_, _, _, _, 0) -> ok;
find_loop(Tab, Names, Members, Size, N) ->
    I = N rem Size + 1,
    Name = element(I, Names),
    Pid = element(I, Members),
    case ets:lookup(Tab, Name) of
        [{_, Pid}] -> find_loop(Tab, Names, Members, Size, N - 1);
        _ -> fail("registry: find(~s) failed", [Name])
    end.

dispatch_loop(_, 0) -> ok;
dispatch_loop(Group, N) ->
    Members = pg:get_members(Group),
    [P ! ping || P <- Members],
    [receive ack -> ok after 30000 -> fail("registry: a dispatch was lost", []) end
     || _ <- Members],
    dispatch_loop(Group, N - 1).
