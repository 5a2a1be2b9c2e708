%% The gen_servers of the reader_db workload (see peer_erlang.erl): the DB actor, its reader
%% actors and its writer. The DB hands each read, with the caller's From, to a reader round
%% robin; the reader answers the caller directly with gen_server:reply/2. The writer only
%% holds the table: the workload is read-only.
-module(peer_erlang_db).
-behaviour(gen_server).
-export([init/1, handle_call/3, handle_cast/2]).

init(State) -> {ok, State}.

handle_call({read, Id}, From, {db, Readers, Next}) ->
    gen_server:cast(element(Next + 1, Readers), {read, Id, From}),
    {noreply, {db, Readers, (Next + 1) rem tuple_size(Readers)}}.

handle_cast({read, Id, From}, {reader, Table} = State) ->
    gen_server:reply(From, element(Id, Table)),
    {noreply, State}.
