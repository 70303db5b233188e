mod corpus;
